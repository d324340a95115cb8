import type {
  GaugeActivityBucket,
  GaugeFailureCode,
  GaugeProviderStatus,
  GaugeReading,
} from '../../../protocol/gauge.ts';

// The contract between the gauge actor and one collector. A collector runs inside the gauge worker thread,
// is handed everything it may use, and returns redacted readings. It never logs, never persists and never
// sees another source's state; the actor does the scheduling, time limits, persistence and redaction checks.

export interface CollectContext {
  /** The local ID of the account/source being collected; readings carry it as accountId. */
  accountId: string;
  /** The credential, read from the vault by the actor, or null (built-in and local_logs sources). */
  credential: string | null;
  /** Allow-listed non-secret configuration of the source (e.g. baseUrl for tests, log paths). */
  config: Readonly<Record<string, unknown>>;
  /** Aborted when the source's time limit passes or the service stops; pass it to every request and read. */
  signal: AbortSignal;
  now(): Date;
  /** The cursor this collector returned last time (file offsets, seen IDs), or null on the first run. */
  state: unknown;
}

export interface CollectResult {
  readings: GaugeReading[];
  statuses?: GaugeProviderStatus[];
  /** Counts read since the last cursor: the actor adds them to the stored buckets (same hour and dimensions). */
  activity?: GaugeActivityBucket[];
  /** Persisted by the actor and handed back as `state` next time (keep it bounded: no unbounded ID sets). */
  state?: unknown;
  /** The provider asked for a pause (a Retry-After on a 2xx, or a known reset): the scheduler honours it. */
  retryAfterMs?: number;
  /**
   * The provider-side identity the credential belongs to (an org ID, an email), when the provider says: the
   * actor stores only a salted hash of it, so a second account for the same identity can be recognised.
   */
  identity?: string;
  /** Bounded counters for diagnostics (files read, bytes read, malformed lines, unreadable files, ...). */
  counters?: Record<string, number>;
}

/** A failed collection: the code and a message safe to show (no credential, path, email or raw body). */
export class CollectorError extends Error {
  readonly code: GaugeFailureCode;
  readonly retryAfterMs: number | undefined;
  readonly upstreamStatus: number | undefined;
  constructor(
    code: GaugeFailureCode,
    message: string,
    options: { retryAfterMs?: number; upstreamStatus?: number } = {},
  ) {
    super(message);
    this.name = 'CollectorError';
    this.code = code;
    this.retryAfterMs = options.retryAfterMs;
    this.upstreamStatus = options.upstreamStatus;
  }
}

export interface Collector {
  /** The provider descriptor ID this collector serves (docs/api.md, Gauge). */
  providerId: string;
  collect(ctx: CollectContext): Promise<CollectResult>;
}
