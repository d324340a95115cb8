import {
  AVAILABLE_REGISTRY_SOURCES,
  IMPLEMENTED_MODEL_ACTIONS,
  IMPLEMENTED_SERVICE_ACTIONS,
  MODEL_ACTIONS_BY_KIND,
} from './actions.ts';
import { FAMILIES, FAMILY_OPERATIONS } from './families.ts';
import { USAGE_GROUP_BY } from './http/usage.ts';
import { PRESET_PARAMETERS, PRESET_SCOPE_GROUPS, PRESET_SYSTEM_FAMILIES } from './presets.ts';
import { KINDS, PROVIDER_ACTIONS, PROVIDER_KINDS } from './providers.ts';
import { SCOPES } from './scopes.ts';
import { TRANSLATIONS } from './translation.ts';

// GET /v1/capabilities, derived from the tables the code runs on and from the routes the edge actually
// serves, so it cannot claim what the service does not do. IDs only: no records, credentials or paths.

export interface ServedRoute {
  method: string;
  path: string;
}

/** Route patterns use `:id`; the contract writes `{id}`. */
const served = (routes: readonly ServedRoute[]) => {
  const set = new Set(routes.map((r) => `${r.method} ${r.path.replace(/:([a-z]+)/gi, '{$1}')}`));
  return (method: string, path: string) => set.has(`${method} ${path}`);
};

export function buildCapabilities(routes: readonly ServedRoute[]) {
  const has = served(routes);
  const families = FAMILIES.map((id) => ({
    id,
    operations: FAMILY_OPERATIONS[id].map((op) => ({
      method: op.method,
      path: op.path,
      model: op.model,
      available: has(op.method, op.path),
    })),
  }));
  const anyServed = (prefix: string) => routes.some((r) => r.path.startsWith(prefix));
  return {
    object: 'capabilities',
    apiVersion: 'current',
    families,
    /** Protocol translations: a call in `client` reaches a model that lists only `upstream` (docs/api.md). */
    translations: Object.values(TRANSLATIONS).map((t) => ({ client: t.client, upstream: t.upstream })),
    providerKinds: PROVIDER_KINDS.map((id) => ({
      id,
      location: KINDS[id].location,
      credential: KINDS[id].credential,
      hintHeaders: [...KINDS[id].hints],
      families: [...KINDS[id].families],
      providerActions: [...KINDS[id].actions],
      modelActions: [...MODEL_ACTIONS_BY_KIND[id]],
    })),
    actions: {
      provider: [...PROVIDER_ACTIONS],
      service: [...IMPLEMENTED_SERVICE_ACTIONS],
      model: [...IMPLEMENTED_MODEL_ACTIONS],
    },
    registrySources: AVAILABLE_REGISTRY_SOURCES.map((s) => ({ id: s.id, kinds: [...s.kinds] })),
    scopes: [...SCOPES],
    presets: {
      parameters: Object.fromEntries(FAMILIES.map((f) => [f, [...PRESET_PARAMETERS[f]]])),
      systemPromptFamilies: [...PRESET_SYSTEM_FAMILIES],
      scopeGroups: PRESET_SCOPE_GROUPS.map((g) => ({ id: g.id, families: [...g.families] })),
    },
    usage: { groupBy: [...USAGE_GROUP_BY] },
    features: {
      gateway: families.some((f) => f.operations.some((op) => op.available)),
      modelDiscovery: has('GET', '/v1/models'),
      providers: has('GET', '/v1/providers'),
      catalog: has('GET', '/v1/catalog/models'),
      tokens: has('GET', '/v1/tokens'),
      auditEvents: has('GET', '/v1/audit-events'),
      settings: has('GET', '/v1/settings'),
      usage: anyServed('/v1/usage/'),
      hardware: anyServed('/v1/hardware/'),
      presets: anyServed('/v1/presets'),
      routePacks: anyServed('/v1/route-packs'),
      runtime: anyServed('/v1/runtime/'),
      services: anyServed('/v1/services'),
      jobs: anyServed('/v1/jobs'),
      pairing: anyServed('/v1/pairing/'),
      gauge: anyServed('/v1/gauge'),
    },
  };
}

export type CapabilitiesDocument = ReturnType<typeof buildCapabilities>;
