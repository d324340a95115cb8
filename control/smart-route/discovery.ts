import { PRESET_PREFIX } from '../../protocol/http/presets.ts';
import { ROUTE_PREFIX } from '../../protocol/http/route-packs.ts';
import type { PresetService } from '../presets/preset-service.ts';
import type { RoutePackService } from './pack-service.ts';
import type { SyntheticModel } from '../../protocol/smart-route.ts';

// Presets and route packs as synthetic entries of GET /v1/models (docs/api.md). Only what a
// client may act on: names, families, the strategy and route IDs; never provider records or credentials.

export type { SyntheticModel };

const seconds = (iso: string) => Math.floor(Date.parse(iso) / 1000);

export function syntheticModels(presets: PresetService, packs: RoutePackService): SyntheticModel[] {
  const fromPresets = presets.discoverable().map(({ preset, target, families }) => ({
    id: `${PRESET_PREFIX}${preset.slug}`,
    displayName: preset.displayName,
    created: seconds(preset.createdAt),
    families,
    meta: { kind: 'preset', model: target.model.id },
  }));
  const fromPacks = packs.discoverable().map(({ pack, families }) => ({
    id: `${ROUTE_PREFIX}${pack.slug}`,
    displayName: pack.displayName,
    created: seconds(pack.createdAt),
    families,
    meta: {
      kind: 'route_pack',
      strategy: pack.strategy,
      routes: pack.routes.map((r) => r.id),
      fallback: pack.fallback.model,
    },
  }));
  return [...fromPresets, ...fromPacks];
}
