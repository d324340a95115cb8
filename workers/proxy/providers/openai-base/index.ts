import { bearerAuth } from '../request.ts';
import { gatewayFromLayout, type GatewayLayout } from '../gateway-base.ts';
import type { ProviderAdapter } from '../types.ts';
import { styleAModels, type StyleAModelsOptions } from './models.ts';

export { dataEntries, styleAModel, styleAModels, type StyleAEntry, type StyleAModelsOptions } from './models.ts';

/** A styleA-compatible kind: Bearer auth and the shared model list with the kind's own overrides. */
export function styleAAdapter(models: StyleAModelsOptions, gateway: GatewayLayout): ProviderAdapter {
  return { authHeaders: bearerAuth, models: styleAModels(models), gateway: gatewayFromLayout(gateway) };
}
