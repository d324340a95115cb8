import { Type, type Static } from '@sinclair/typebox';
import { GAUGE_AUTH_MODES, type GaugeAuthMode } from '../gauge.ts';
import { GAUGE_LIMITS, GAUGE_PROVIDERS } from '../gauge-catalog.ts';
import { compile } from '../validate.ts';

// Gauge auth sessions (docs/api.md, Gauge): a bounded RFC 8628 device flow the service runs itself.
// What a session shows: never the device code, the client's credentials or the token it obtains.

const Id = Type.String({ minLength: 1, maxLength: GAUGE_LIMITS.idMax });

export const GaugeAuthSessionCreateSchema = Type.Object(
  {
    providerId: Id,
    authMode: Type.Union(GAUGE_AUTH_MODES.map((m) => Type.Literal(m))),
    /** An existing account whose credential the flow replaces; omitted, the flow creates an account. */
    accountId: Type.Optional(Id),
  },
  { additionalProperties: false },
);
export type GaugeAuthSessionCreate = Static<typeof GaugeAuthSessionCreateSchema>;
export const checkGaugeAuthSessionCreate = compile(GaugeAuthSessionCreateSchema);

/** Providers a device flow can connect: the catalog's own list, so a new one needs no second edit. */
export const GAUGE_DEVICE_FLOW_PROVIDERS: readonly string[] = GAUGE_PROVIDERS.filter((p) =>
  p.authModes.includes('oauth_device'),
).map((p) => p.id);

/**
 * pending: codes issued, not polled yet; polling: the service polls the token endpoint; the rest are final.
 * pending -> polling -> succeeded | failed | expired; pending or polling -> cancelled (DELETE) or failed/expired.
 */
export const GAUGE_AUTH_SESSION_STATES = ['pending', 'polling', 'succeeded', 'failed', 'expired', 'cancelled'] as const;
export type GaugeAuthSessionState = (typeof GAUGE_AUTH_SESSION_STATES)[number];

/** Why a session failed or expired, as it may be shown: never the authorization server's own text. */
export type GaugeAuthFailureCode =
  | 'access_denied'
  | 'expired_token'
  | 'expired'
  | 'refused'
  | 'malformed'
  | 'unreachable'
  | 'account_missing'
  | 'store_failed'
  | 'shutdown';

export interface GaugeAuthSession {
  id: string;
  providerId: string;
  authMode: GaugeAuthMode;
  /** The account the credential goes to: the one named at creation, or the one created on success; else null. */
  accountId: string | null;
  state: GaugeAuthSessionState;
  userCode: string | null;
  verificationUri: string | null;
  verificationUriComplete: string | null;
  /** Seconds between polls; grows by 5 on each slow_down and stays grown. */
  interval: number;
  expiresAt: string | null;
  createdAt: string;
  /** Set once the session is final (not for succeeded or cancelled sessions). */
  failure: { code: GaugeAuthFailureCode; message: string } | null;
}
