import { Type, type Static } from '@sinclair/typebox';
import { compile } from '../validate.ts';

// Enforced limits' HTTP bodies and answers (docs/api.md, Limits). A limit caps what one scope (a local token,
// a service account, an agent session, a route pack, a provider's credential, or the whole service) may use in
// a calendar window; the gateway reserves each call's worst case before anything goes upstream and refuses a
// call that does not fit.

export const LIMIT_SCOPES = ['token', 'service_account', 'session', 'route_pack', 'credential', 'service'] as const;
export type LimitScopeKind = (typeof LIMIT_SCOPES)[number];

/**
 * Calendar windows: minute and hour in UTC; day, week (from Monday) and month in the service's local time; or
 * `gauge`, a subscription window of a Gauge account (with the metric `gauge_percent`).
 */
export const LIMIT_WINDOWS = ['minute', 'hour', 'day', 'week', 'month', 'gauge'] as const;
export type LimitWindow = (typeof LIMIT_WINDOWS)[number];

export const LIMIT_METRICS = [
  'requests',
  'input_tokens',
  'output_tokens',
  'total_tokens',
  'usd',
  'gauge_percent',
] as const;
export type LimitMetric = (typeof LIMIT_METRICS)[number];

export const LIMIT_BOUNDS = {
  /** Limits one installation keeps: every gateway call checks each enabled one against its scope. */
  count: 200,
  nameMax: 200,
  /** A token, service-account, session or credential ID, or a route pack's slug. */
  scopeIdMax: 128,
  /** USD; far above any real limit, low enough to stay exact in nano-dollars. */
  usdMax: 1_000_000_000,
  /** Requests or tokens. */
  countMax: 1_000_000_000_000,
} as const;

/**
 * `id`: the token, service account, session, route pack or credential (`key_...`); null for `service`, and for
 * `session` every session.
 */
export interface LimitScope {
  kind: LimitScopeKind;
  id: string | null;
}

export interface LimitGaugeWindow {
  accountId: string;
  /** The window's ID in the account's readings (GET /v1/gauge/accounts/{id}), e.g. a 5-hour or a weekly one. */
  windowId: string;
  /**
   * What the gate stops once the window is at or past the share. `new_sessions` (the default): calls of agent
   * sessions the gate has not admitted a call of while open, and calls that name no session; sessions already
   * under way go on. `calls`: every call in scope. Records made before this field stop `calls`.
   */
  stops?: LimitGaugeStops;
}

export const LIMIT_GAUGE_STOPS = ['new_sessions', 'calls'] as const;
export type LimitGaugeStops = (typeof LIMIT_GAUGE_STOPS)[number];

export interface LimitRecord {
  id: string;
  name: string;
  enabled: boolean;
  scope: LimitScope;
  window: LimitWindow;
  metric: LimitMetric;
  /** The bound: requests, tokens, USD, or (gauge_percent) the share of the Gauge window in percent. */
  max: number;
  /** The Gauge account and window a `gauge` limit reads; null for calendar windows. */
  gauge: LimitGaugeWindow | null;
  createdAt: string;
  updatedAt: string;
}

/** One counter of a limit: its scope's whole use, or one session's under a per-session limit. */
export interface LimitCounterView {
  /** The session ID under a per-session limit; else the scope's ID (null for `service`). */
  key: string | null;
  /** Settled use in the current window, in the limit's metric. */
  used: number;
  /** Worst cases of the calls in flight. */
  reserved: number;
  /** Null for a `gauge` limit, whose window is the provider's. */
  windowStart: string | null;
  /** Null when a `gauge` limit's reading says no reset time. */
  resetsAt: string | null;
}

export interface LimitView extends LimitRecord {
  /** The counters of the current window, most used first (at most 50). */
  counters: LimitCounterView[];
}

const Name = Type.String({ minLength: 1, maxLength: LIMIT_BOUNDS.nameMax });
const ScopeId = Type.String({ minLength: 1, maxLength: LIMIT_BOUNDS.scopeIdMax, pattern: '^[A-Za-z0-9._:@-]+$' });
const Scope = Type.Object(
  {
    kind: Type.Union(LIMIT_SCOPES.map((k) => Type.Literal(k))),
    id: Type.Optional(Type.Union([ScopeId, Type.Null()])),
  },
  { additionalProperties: false },
);
const Max = Type.Number({ exclusiveMinimum: 0, maximum: LIMIT_BOUNDS.countMax });

export const LimitCreateSchema = Type.Object(
  {
    name: Name,
    enabled: Type.Optional(Type.Boolean()),
    scope: Scope,
    window: Type.Union(LIMIT_WINDOWS.map((w) => Type.Literal(w))),
    metric: Type.Union(LIMIT_METRICS.map((m) => Type.Literal(m))),
    max: Max,
    gauge: Type.Optional(
      Type.Object(
        {
          accountId: Type.String({ minLength: 1, maxLength: 160 }),
          windowId: Type.String({ minLength: 1, maxLength: 64 }),
          stops: Type.Optional(Type.Union(LIMIT_GAUGE_STOPS.map((v) => Type.Literal(v)))),
        },
        { additionalProperties: false },
      ),
    ),
  },
  { additionalProperties: false },
);
export type LimitCreate = Static<typeof LimitCreateSchema>;
export const checkLimitCreate = compile(LimitCreateSchema);

/** The scope, window and metric are fixed once made: a changed one would be a new limit with new counters. */
export const LimitUpdateSchema = Type.Object(
  { name: Type.Optional(Name), enabled: Type.Optional(Type.Boolean()), max: Type.Optional(Max) },
  { additionalProperties: false },
);
export type LimitUpdate = Static<typeof LimitUpdateSchema>;
export const checkLimitUpdate = compile(LimitUpdateSchema);

/** The loop brake (docs/api.md, Limits): off until turned on; a repeat is a call whose last tool call is the same. */
export interface LoopBrake {
  enabled: boolean;
  /** The same tool call with the same arguments this many times in one session pauses it. */
  repeats: number;
  /** ... within this many seconds. */
  windowSeconds: number;
}

export const LOOP_BRAKE_DEFAULTS: LoopBrake = { enabled: false, repeats: 5, windowSeconds: 120 };

export const LoopBrakeUpdateSchema = Type.Object(
  {
    enabled: Type.Optional(Type.Boolean()),
    repeats: Type.Optional(Type.Integer({ minimum: 2, maximum: 1000 })),
    windowSeconds: Type.Optional(Type.Integer({ minimum: 1, maximum: 86_400 })),
  },
  { additionalProperties: false },
);
export type LoopBrakeUpdate = Static<typeof LoopBrakeUpdateSchema>;
export const checkLoopBrakeUpdate = compile(LoopBrakeUpdateSchema);

/** A session the loop brake paused; its calls are refused until a person resumes it. */
export interface PausedSession {
  session: string;
  pausedAt: string;
  /** The repeated tool's name, cut to 64 characters. */
  tool: string;
  repeats: number;
}
