import type { GaugeAuthMode, GaugeCapability } from './gauge.ts';

// Gauge's static vocabulary: the provider catalog, which collector serves which provider/auth adapter, the
// built-in sources and the non-secret configuration each collector may be given. Pure data: the edge validates
// against it, the gauge worker looks collectors up by it.

export interface GaugeProviderDescriptor {
  id: string;
  displayName: string;
  authModes: GaugeAuthMode[];
  capabilities: GaugeCapability[];
  /** False when either list is empty: catalogued, not connectable. */
  connectable: boolean;
}

const provider = (
  id: string,
  displayName: string,
  authModes: GaugeAuthMode[],
  capabilities: GaugeCapability[],
): GaugeProviderDescriptor => ({
  id,
  displayName,
  authModes,
  capabilities,
  connectable: authModes.length > 0 && capabilities.length > 0,
});

/** Complete and in stable display order (GET /v1/gauge/providers). */
export const GAUGE_PROVIDERS: readonly GaugeProviderDescriptor[] = [
  provider('openai', 'OpenAI', ['admin_key'], ['spend', 'activity', 'rate_limits', 'status']),
  provider('anthropic', 'Anthropic', ['admin_key'], ['spend', 'activity', 'rate_limits', 'status']),
  provider('openrouter', 'OpenRouter', ['api_key'], ['quota', 'credits', 'spend', 'activity', 'rate_limits']),
  provider('github-copilot', 'GitHub Copilot', ['api_key', 'oauth_device'], ['quota', 'status']),
  provider('claude-code', 'Claude Code (local logs)', ['local_logs'], ['activity', 'quota']),
  provider('codex', 'Codex (local logs)', ['local_logs'], ['activity', 'quota']),
  provider('service', 'This service (metered usage)', ['none'], ['activity', 'spend']),
  // Catalogued so a person sees why they cannot connect them: no usage or quota API for a key holder.
  provider('google-gemini', 'Google Gemini', [], []),
  provider('mistral', 'Mistral', [], []),
];

export const GAUGE_COLLECTOR_IDS = [
  'openai',
  'anthropic',
  'openrouter',
  'github-copilot',
  'claude-code',
  'codex',
  'statuspage',
] as const;
export type GaugeCollectorId = (typeof GAUGE_COLLECTOR_IDS)[number];

/**
 * The provider/auth adapters a person may create an account with (POST /v1/gauge/accounts); anything else is
 * 404. github-copilot's device flow arrives with auth sessions (W2.2).
 */
export const GAUGE_ACCOUNT_ADAPTERS: readonly {
  providerId: string;
  authMode: GaugeAuthMode;
  collectorId: GaugeCollectorId;
}[] = [
  { providerId: 'openai', authMode: 'admin_key', collectorId: 'openai' },
  { providerId: 'anthropic', authMode: 'admin_key', collectorId: 'anthropic' },
  { providerId: 'openrouter', authMode: 'api_key', collectorId: 'openrouter' },
  { providerId: 'github-copilot', authMode: 'api_key', collectorId: 'github-copilot' },
];

export function adapterOf(providerId: string, authMode: string): (typeof GAUGE_ACCOUNT_ADAPTERS)[number] | undefined {
  return GAUGE_ACCOUNT_ADAPTERS.find((a) => a.providerId === providerId && a.authMode === authMode);
}

/** Adapters whose credential only an auth session obtains (POST /v1/gauge/auth-sessions), never a pasted one. */
export const GAUGE_SESSION_ADAPTERS: typeof GAUGE_ACCOUNT_ADAPTERS = [
  { providerId: 'github-copilot', authMode: 'oauth_device', collectorId: 'github-copilot' },
];

/** Allow-listed, non-secret configuration keys per collector (PUT /v1/gauge/sources/{id}, account config). */
export const GAUGE_CONFIG_KEYS: Record<GaugeCollectorId, readonly ('baseUrl' | 'paths')[]> = {
  openai: ['baseUrl'],
  anthropic: ['baseUrl'],
  openrouter: ['baseUrl'],
  'github-copilot': ['baseUrl'],
  statuspage: ['baseUrl'],
  'claude-code': ['paths'],
  codex: ['paths'],
};

export type GaugeSourceKind = 'service' | 'live_headers' | 'status' | 'local_logs' | 'account';

export interface GaugeBuiltInSource {
  id: string;
  kind: GaugeSourceKind;
  collectorId: GaugeCollectorId | null;
  providerId: string | null;
  authMode: GaugeAuthMode;
  label: string;
  enabled: boolean;
  config: GaugeSourceConfig;
}

// A type, not an interface, so it is assignable to a collector's Record<string, unknown> config.
export type GaugeSourceConfig = {
  baseUrl?: string;
  paths?: string[];
};

/**
 * Built-in sources exist from the start. Status pages reach the public internet and local-log sources read the
 * person's files, so both start disabled: nothing leaves the machine or opens a file until someone opts in.
 */
export const GAUGE_BUILT_IN_SOURCES: readonly GaugeBuiltInSource[] = [
  {
    id: 'service',
    kind: 'service',
    collectorId: null,
    providerId: 'service',
    authMode: 'none',
    label: 'This service',
    enabled: true,
    config: {},
  },
  {
    id: 'live-headers',
    kind: 'live_headers',
    collectorId: null,
    providerId: null,
    authMode: 'none',
    label: 'Rate-limit headers on proxied traffic',
    enabled: true,
    config: {},
  },
  {
    id: 'status-openai',
    kind: 'status',
    collectorId: 'statuspage',
    providerId: 'openai',
    authMode: 'none',
    label: 'OpenAI status page',
    enabled: false,
    config: { baseUrl: 'https://status.openai.com' },
  },
  {
    id: 'status-anthropic',
    kind: 'status',
    collectorId: 'statuspage',
    providerId: 'anthropic',
    authMode: 'none',
    label: 'Anthropic status page',
    enabled: false,
    config: { baseUrl: 'https://status.anthropic.com' },
  },
  {
    id: 'status-github-copilot',
    kind: 'status',
    collectorId: 'statuspage',
    providerId: 'github-copilot',
    authMode: 'none',
    label: 'GitHub status page',
    enabled: false,
    config: { baseUrl: 'https://www.githubstatus.com' },
  },
  {
    id: 'claude-code',
    kind: 'local_logs',
    collectorId: 'claude-code',
    providerId: 'claude-code',
    authMode: 'local_logs',
    label: 'Claude Code logs',
    enabled: false,
    config: {},
  },
  {
    id: 'codex',
    kind: 'local_logs',
    collectorId: 'codex',
    providerId: 'codex',
    authMode: 'local_logs',
    label: 'Codex logs',
    enabled: false,
    config: {},
  },
];

/** The list bounds of docs/api.md's conventions. */
export const GAUGE_LIMITS = {
  idMax: 160,
  filterMax: 320,
  pageMax: 200,
  pageDefault: 50,
  offsetMax: 1_000_000,
  labelMax: 200,
  /** How many sources one refresh may name. */
  refreshIdsMax: 200,
  historyDefaultDays: 30,
} as const;

/** The prefix of the accounts the live-headers source keeps, one per relayed provider record. */
export const LIVE_HEADERS_ACCOUNT_PREFIX = 'live-headers.';
