import { Type, type Static } from '@sinclair/typebox';
import { GAUGE_AUTH_MODES, type GaugeAuthMode, type GaugeProviderStatus, type GaugeReading } from '../gauge.ts';
import { GAUGE_LIMITS, type GaugeSourceConfig, type GaugeSourceKind } from '../gauge-catalog.ts';
import type { GaugeRefreshOutcome } from '../gauge-messages.ts';
import { compile } from '../validate.ts';

// Gauge's HTTP bodies (docs/api.md, Gauge). Writes refuse unknown fields; credentials are write-only.

const Id = Type.String({ minLength: 1, maxLength: GAUGE_LIMITS.idMax });
const Label = Type.String({ minLength: 1, maxLength: GAUGE_LIMITS.labelMax });
// Checked for shape only; it goes to the vault and nowhere else.
const Credential = Type.String({ minLength: 1, maxLength: 16_384 });
const BaseUrl = Type.String({ minLength: 1, maxLength: 2048 });
const Paths = Type.Array(Type.String({ minLength: 1, maxLength: 1024 }), { maxItems: 8 });

/** A key set to null returns to the collector's default. Which keys a source takes: GAUGE_CONFIG_KEYS. */
export const GaugeConfigSchema = Type.Object(
  {
    baseUrl: Type.Optional(Type.Union([BaseUrl, Type.Null()])),
    paths: Type.Optional(Type.Union([Paths, Type.Null()])),
  },
  { additionalProperties: false },
);
export type GaugeConfigPatch = Static<typeof GaugeConfigSchema>;

export const GaugeAccountCreateSchema = Type.Object(
  {
    providerId: Id,
    authMode: Type.Union(GAUGE_AUTH_MODES.map((m) => Type.Literal(m))),
    label: Type.Optional(Label),
    enabled: Type.Optional(Type.Boolean()),
    credential: Type.Optional(Credential),
    config: Type.Optional(GaugeConfigSchema),
  },
  { additionalProperties: false },
);
export type GaugeAccountCreate = Static<typeof GaugeAccountCreateSchema>;
export const checkGaugeAccountCreate = compile(GaugeAccountCreateSchema);

export const GaugeAccountUpdateSchema = Type.Object(
  {
    label: Type.Optional(Label),
    enabled: Type.Optional(Type.Boolean()),
    /** A string replaces the stored credential; null clears it. */
    credential: Type.Optional(Type.Union([Credential, Type.Null()])),
    config: Type.Optional(GaugeConfigSchema),
  },
  { additionalProperties: false },
);
export type GaugeAccountUpdate = Static<typeof GaugeAccountUpdateSchema>;
export const checkGaugeAccountUpdate = compile(GaugeAccountUpdateSchema);

export const GaugeSourceUpdateSchema = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean()),
    credential: Type.Optional(Type.Union([Credential, Type.Null()])),
    config: Type.Optional(GaugeConfigSchema),
  },
  { additionalProperties: false },
);
export type GaugeSourceUpdate = Static<typeof GaugeSourceUpdateSchema>;
export const checkGaugeSourceUpdate = compile(GaugeSourceUpdateSchema);

export const GaugeRefreshRequestSchema = Type.Object(
  {
    sourceIds: Type.Optional(Type.Array(Id, { minItems: 1, maxItems: GAUGE_LIMITS.refreshIdsMax, uniqueItems: true })),
  },
  { additionalProperties: false },
);
export type GaugeRefreshRequest = Static<typeof GaugeRefreshRequestSchema>;
export const checkGaugeRefreshRequest = compile(GaugeRefreshRequestSchema);

export const GAUGE_READINGS_QUERY = ['providerId', 'accountId', 'after', 'before', 'limit', 'offset'] as const;

export type GaugeAuthState = 'not_required' | 'missing' | 'configured' | 'failed';
export type GaugeCollectionState = 'disabled' | 'never' | 'ok' | 'failing';

export interface GaugeAccountSummary {
  id: string;
  providerId: string;
  authMode: GaugeAuthMode;
  label: string;
  enabled: boolean;
  builtIn: boolean;
  credentialConfigured: boolean;
  status: { auth: GaugeAuthState; collection: GaugeCollectionState };
  lastReadingAt: string | null;
}

export interface GaugeSourceSummary {
  id: string;
  kind: GaugeSourceKind;
  providerId: string | null;
  authMode: GaugeAuthMode;
  label: string;
  enabled: boolean;
  builtIn: boolean;
  credentialConfigured: boolean;
  config: GaugeSourceConfig;
  createdAt: string;
  updatedAt: string;
}

export interface GaugeHistoryPoint {
  accountId: string;
  providerId: string;
  hour: string;
  windows: GaugeReading['windows'];
  spend: GaugeReading['spend'];
  credits: GaugeReading['credits'];
}

export interface GaugeDashboard {
  enabled: boolean;
  since: string;
  accounts: GaugeAccountSummary[];
  readings: GaugeReading[];
  statuses: GaugeProviderStatus[];
  history: GaugeHistoryPoint[];
  /** True when more history points matched than one answer carries (GAUGE_HISTORY_MAX). */
  historyTruncated: boolean;
}

export interface GaugeDiagnostic {
  sourceId: string;
  kind: GaugeSourceKind;
  providerId: string | null;
  /** A stable hash of the local account ID: enough to correlate, not to look anything up. */
  accountRef: string;
  enabled: boolean;
  lastOutcome: string | null;
  lastRunAt: string | null;
  lastSuccessAt: string | null;
  lastFailureAt: string | null;
  consecutiveFailures: number;
  nextRunAt: string | null;
}

export interface GaugeRefreshResult {
  data: GaugeRefreshOutcome[];
}

/** The most history points one dashboard answer carries. */
export const GAUGE_HISTORY_MAX = 5_000;
