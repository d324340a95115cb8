import { Type, type Static } from '@sinclair/typebox';
import { compile } from '../validate.ts';
import { GAUGE_DEVICE_FLOW_PROVIDERS } from './gauge-auth-sessions.ts';
import {
  REQUEST_LOG_DAYS_MAX,
  REQUEST_LOG_MEGABYTES_MAX,
  REQUEST_LOG_TOKENS_MAX,
  TOKEN_ID_PATTERN,
} from './request-log.ts';

// runtime.tuning: 0 is "automatic" everywhere (docs/api.md, Settings); gpuLayers -1 forces CPU only.
export const TuningSchema = Type.Object(
  {
    contextSize: Type.Integer({ minimum: 0, maximum: 1_048_576 }),
    threads: Type.Integer({ minimum: 0, maximum: 1024 }),
    gpuLayers: Type.Integer({ minimum: -1, maximum: 4096 }),
    parallel: Type.Integer({ minimum: 0, maximum: 256 }),
    batchSize: Type.Integer({ minimum: 0, maximum: 65_536 }),
  },
  { additionalProperties: false },
);
export type Tuning = Static<typeof TuningSchema>;

const MiB = 1024 * 1024;
const Days = Type.Integer({ minimum: 1, maximum: 3650 });
const Origin = Type.String({ minLength: 1, maxLength: 2048 });
// GitHub's client IDs look like `Iv1.0123456789abcdef` or `Ov23li...`; the bound leaves room for other servers.
const OAuthClient = Type.Object(
  {
    clientId: Type.String({ minLength: 1, maxLength: 128, pattern: '^[A-Za-z0-9._~-]+$' }),
    baseUrl: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 2048 }), Type.Null()])),
  },
  { additionalProperties: false },
);
/** Per provider: an object sets (replaces) its client, null removes it. */
const OAuthClients = Type.Object(
  Object.fromEntries(
    GAUGE_DEVICE_FLOW_PROVIDERS.map((id) => [id, Type.Optional(Type.Union([OAuthClient, Type.Null()]))]),
  ),
  {
    additionalProperties: false,
  },
);

/** What is persisted. Host and port are not settings: the listener is loopback or all interfaces, nothing else. */
export interface StoredSettings {
  bind: { networkExposed: boolean };
  cors: { allowedOrigins: string[] };
  /**
   * keepAliveSeconds: how long an idle embedded model stays loaded, and how long a session keeps a model warm
   * (never evicted for another's load); 0 = unloaded after each call, -1 = never. The scheduler's (docs/api.md,
   * Local-model scheduler): memoryBudgetBytes, the memory local models may hold (null = the hardware probe's VRAM
   * and RAM); loadQueueSize, the loads that may wait for memory at once; loadWaitSeconds, how long one waits.
   */
  runtime: {
    modelsDirectory: string | null;
    tuning: Tuning;
    keepAliveSeconds: number;
    memoryBudgetBytes: number | null;
    loadQueueSize: number;
    loadWaitSeconds: number;
  };
  usage: { enabled: boolean; retentionDays: number };
  /** oauthClients: the OAuth client a person registered per device-flow provider (none is bundled). */
  gauge: { enabled: boolean; retentionDays: number; oauthClients: Record<string, GaugeOAuthClient> };
  /**
   * inflightBodyBytes: request-body bytes held at once across connections; null = a sixteenth of the memory, 64 MiB..1
   * GiB.
   */
  limits: { jsonBodyBytes: number; multipartBodyBytes: number; inflightBodyBytes: number | null };
  /**
   * providerOrder: where a plain upstream model name (`claude-sonnet-4-5`, `gpt-5`) that is neither a model ID
   * nor an alias is looked up, as `<provider>/<name>`, first match first; empty = whichever one provider has it.
   */
  /** sessionIdleMinutes: how long a session keeps its provider key without a call (docs/api.md, Key pools). */
  routing: { providerOrder: string[]; sessionIdleMinutes: number };
  /**
   * The request log (docs/api.md, Request log), off by default since entries hold prompts and answers: on for every
   * call, or only for the local tokens listed; kept `retentionDays` and at most `maxMegabytes`, oldest dropped first.
   */
  requestLog: { enabled: boolean; tokenIds: string[]; retentionDays: number; maxMegabytes: number };
  /**
   * OpenTelemetry traces over OTLP/HTTP (docs/api.md, Traces). endpoint: the traces URL; null = the exporter's
   * own default (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else http://localhost:4318/v1/traces). Header values may
   * hold a backend's API key: they are never shown or logged, only their names.
   */
  traces: { enabled: boolean; endpoint: string | null; headers: Record<string, string> };
}

/**
 * A client ID is not a secret; `baseUrl` is the authorization server (GitHub Enterprise, a test fake); null = the
 * provider's.
 */
export interface GaugeOAuthClient {
  clientId: string;
  baseUrl: string | null;
}

export const DEFAULT_SETTINGS: StoredSettings = {
  bind: { networkExposed: false },
  cors: { allowedOrigins: [] },
  runtime: {
    modelsDirectory: null,
    tuning: { contextSize: 0, threads: 0, gpuLayers: 0, parallel: 0, batchSize: 0 },
    keepAliveSeconds: 300,
    memoryBudgetBytes: null,
    loadQueueSize: 16,
    loadWaitSeconds: 30,
  },
  usage: { enabled: true, retentionDays: 400 },
  gauge: { enabled: false, retentionDays: 90, oauthClients: {} },
  limits: { jsonBodyBytes: 16 * MiB, multipartBodyBytes: 64 * MiB, inflightBodyBytes: null },
  routing: { providerOrder: [], sessionIdleMinutes: 10 },
  requestLog: { enabled: false, tokenIds: [], retentionDays: 7, maxMegabytes: 256 },
  traces: { enabled: false, endpoint: null, headers: {} },
};

/** The most providers `routing.providerOrder` names. */
export const PROVIDER_ORDER_MAX = 32;

/** The most headers `traces.headers` holds: a backend wants one or two (Honeycomb's team key and dataset). */
export const TRACE_HEADERS_MAX = 16;
// An RFC 9110 token, lower case as HTTP/2 sends it, so two spellings cannot both be stored.
const TraceHeaderName = Type.String({ minLength: 1, maxLength: 64, pattern: "^[a-z0-9!#$%&'*+.^_`|~-]+$" });
// Visible ASCII, space and tab: no CR or LF that could end the header early.
const TraceHeaderValue = Type.String({ minLength: 1, maxLength: 4096, pattern: '^[\\x20-\\x7e\\t]+$' });

/**
 * Why `dir` cannot name the models directory whatever the file system holds, or null. A NUL byte makes
 * every file system call throw; other control characters are refused too, as the path is printed to the
 * terminal at start. The runtime applies the same rule to a stored value, which an older version accepted.
 */
export function modelsDirectoryProblem(dir: string): string | null {
  return /[\u0000-\u001f\u007f]/.test(dir)
    ? '`runtime.modelsDirectory` holds a control character (such as NUL or a line break).'
    : null;
}

export const SettingsPatchSchema = Type.Object(
  {
    bind: Type.Optional(
      Type.Object({ networkExposed: Type.Optional(Type.Boolean()) }, { additionalProperties: false }),
    ),
    cors: Type.Optional(
      Type.Object(
        { allowedOrigins: Type.Optional(Type.Array(Origin, { maxItems: 64 })) },
        { additionalProperties: false },
      ),
    ),
    runtime: Type.Optional(
      Type.Object(
        {
          modelsDirectory: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 4096 }), Type.Null()])),
          tuning: Type.Optional(Type.Partial(TuningSchema, { additionalProperties: false })),
          // Ollama's default keep-alive is 5 minutes; a week bounds a timer well below setTimeout's 2^31 ms.
          keepAliveSeconds: Type.Optional(Type.Integer({ minimum: -1, maximum: 604_800 })),
          // Up to 64 TiB, a machine's memory; no lower bound but 1 (tests give tiny models tiny budgets).
          memoryBudgetBytes: Type.Optional(
            Type.Union([Type.Integer({ minimum: 1, maximum: 70_368_744_177_664 }), Type.Null()]),
          ),
          loadQueueSize: Type.Optional(Type.Integer({ minimum: 0, maximum: 256 })),
          loadWaitSeconds: Type.Optional(Type.Integer({ minimum: 0, maximum: 600 })),
        },
        { additionalProperties: false },
      ),
    ),
    usage: Type.Optional(
      Type.Object(
        { enabled: Type.Optional(Type.Boolean()), retentionDays: Type.Optional(Days) },
        { additionalProperties: false },
      ),
    ),
    gauge: Type.Optional(
      Type.Object(
        {
          enabled: Type.Optional(Type.Boolean()),
          retentionDays: Type.Optional(Days),
          oauthClients: Type.Optional(OAuthClients),
        },
        { additionalProperties: false },
      ),
    ),
    limits: Type.Optional(
      Type.Object(
        {
          jsonBodyBytes: Type.Optional(Type.Integer({ minimum: 64 * 1024, maximum: 256 * MiB })),
          multipartBodyBytes: Type.Optional(Type.Integer({ minimum: MiB, maximum: 8192 * MiB })),
          inflightBodyBytes: Type.Optional(
            Type.Union([Type.Integer({ minimum: MiB, maximum: 65_536 * MiB }), Type.Null()]),
          ),
        },
        { additionalProperties: false },
      ),
    ),
    routing: Type.Optional(
      Type.Object(
        {
          providerOrder: Type.Optional(
            Type.Array(Type.String({ minLength: 1, maxLength: 63, pattern: '^[a-z0-9][a-z0-9-]{0,62}$' }), {
              maxItems: PROVIDER_ORDER_MAX,
              uniqueItems: true,
            }),
          ),
          sessionIdleMinutes: Type.Optional(Type.Integer({ minimum: 1, maximum: 1440 })),
        },
        { additionalProperties: false },
      ),
    ),
    requestLog: Type.Optional(
      Type.Object(
        {
          enabled: Type.Optional(Type.Boolean()),
          tokenIds: Type.Optional(
            Type.Array(Type.String({ pattern: TOKEN_ID_PATTERN }), {
              maxItems: REQUEST_LOG_TOKENS_MAX,
              uniqueItems: true,
            }),
          ),
          retentionDays: Type.Optional(Type.Integer({ minimum: 1, maximum: REQUEST_LOG_DAYS_MAX })),
          maxMegabytes: Type.Optional(Type.Integer({ minimum: 1, maximum: REQUEST_LOG_MEGABYTES_MAX })),
        },
        { additionalProperties: false },
      ),
    ),
    traces: Type.Optional(
      Type.Object(
        {
          enabled: Type.Optional(Type.Boolean()),
          endpoint: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 2048 }), Type.Null()])),
          // Per name: a string sets the header, null removes it; the others stay (their values are never shown).
          headers: Type.Optional(
            Type.Record(TraceHeaderName, Type.Union([TraceHeaderValue, Type.Null()]), {
              maxProperties: TRACE_HEADERS_MAX,
              additionalProperties: false,
            }),
          ),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
export type SettingsPatch = Static<typeof SettingsPatchSchema>;
export const checkSettingsPatch = compile(SettingsPatchSchema);

/** GET /v1/settings and the PATCH result. Never: token, data directory, database path, credential references. */
export interface SettingsView {
  bind: {
    host: string;
    port: number;
    networkExposed: boolean;
    pending: { networkExposed: boolean } | null;
    restartRequired: boolean;
  };
  cors: { allowedOrigins: string[]; wildcard: boolean };
  runtime: StoredSettings['runtime'];
  usage: StoredSettings['usage'];
  gauge: StoredSettings['gauge'];
  limits: StoredSettings['limits'];
  routing: StoredSettings['routing'];
  requestLog: StoredSettings['requestLog'];
  /** `headerNames`: the names of the stored headers, sorted; their values never leave the service. */
  traces: { enabled: boolean; endpoint: string | null; headerNames: string[] };
  /** Where provider credentials are kept, by name only (never a path). */
  /** `reason`: why the file vault holds the credentials (no keychain, or asked for); null for the keychain. */
  vault: { backend: 'keychain' | 'file'; keyStorage: 'keychain' | 'file' | null; reason: string | null };
}
