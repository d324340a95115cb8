import type { Actor } from '../actor.ts';
import type { ProviderRecord } from '../catalog.ts';
import type { ProviderCreate, ProviderUpdate, ProviderView } from '../http/providers.ts';
import type { ModelListCache } from '../providers.ts';
import { methodsOf } from './methods.ts';

// Providers as the edge reaches them.

export interface TestOutcome {
  ok: boolean;
  latencyMs: number;
  modelCount: number | null;
  error: { code: string; message: string; details: Record<string, unknown> } | null;
}

export interface ProvidersPort {
  list(): ProviderView[] | Promise<ProviderView[]>;
  get(id: string): ProviderView | Promise<ProviderView>;
  record(id: string): ProviderRecord | undefined | Promise<ProviderRecord | undefined>;
  create(input: ProviderCreate, actor: Actor, requestId: string): Promise<ProviderView>;
  /** `mayRedirect`: the caller may send the stored credential to a new `baseUrl` (protocol/credential-redirect.ts). */
  update(
    id: string,
    patch: ProviderUpdate,
    actor: Actor,
    requestId: string,
    mayRedirect: boolean,
  ): Promise<ProviderView>;
  remove(id: string, actor: Actor, requestId: string): Promise<void>;
  test(id: string, actor: Actor, requestId: string): Promise<TestOutcome>;
  refreshModels(id: string, actor: Actor | null, requestId: string | null): Promise<ModelListCache>;
}

export const PROVIDERS_METHODS = methodsOf<ProvidersPort>()([
  'list',
  'get',
  'record',
  'create',
  'update',
  'remove',
  'test',
  'refreshModels',
]);
