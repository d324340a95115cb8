import { Type, type Static } from '@sinclair/typebox';
import type { GatewayOp, UsageReport, UsageRoute } from '../gateway.ts';
import { compile } from '../validate.ts';

// The request log's wire types (docs/api.md, Request log): what one relayed gateway call left, opt in. An entry
// holds what a replay needs (the client's body, op, path, query and headers, the model as the client named it)
// and what the answer was; never a key or a token.

/** Bytes kept of each side's body; the rest is counted (`bytes`) and flagged (`truncated`). */
export const REQUEST_LOG_BODY_CAP = 4 * 1024 * 1024;
/** Local token IDs the setting may list, and the bounds of its retention. */
export const REQUEST_LOG_TOKENS_MAX = 64;
export const REQUEST_LOG_DAYS_MAX = 90;
export const REQUEST_LOG_MEGABYTES_MAX = 10_240;
export const TOKEN_ID_PATTERN = '^tok_[0-9A-HJKMNP-TV-Z]{26}$';
export const REQUEST_ID_RE = /^req_[0-9A-HJKMNP-TV-Z]{26}$/;

export const REQUEST_LOG_QUERY = ['session', 'model', 'status', 'from', 'to', 'limit', 'cursor'] as const;
export const REQUEST_LOG_LIMIT = { default: 50, max: 200 } as const;
export const REQUEST_LOG_OUTCOMES = ['ok', 'failed', 'aborted'] as const;
export type RequestLogOutcome = (typeof REQUEST_LOG_OUTCOMES)[number];

export interface RequestLogBody {
  /** The kept bytes as UTF-8 text, secrets redacted; null when they are not text or were not kept. */
  text: string | null;
  /** The body's whole length in bytes, also past the cap. */
  bytes: number;
  /** Only the first REQUEST_LOG_BODY_CAP bytes were kept. */
  truncated: boolean;
  /** Why `text` is null: `binary` (not UTF-8, e.g. speech audio), `upload` (a multipart upload is not kept). */
  omitted?: 'binary' | 'upload';
}

/** A list item: everything but the bodies and headers. */
export interface RequestLogItem {
  /** The call's request ID (time-sortable: the list's order). */
  id: string;
  /** When the request arrived: its ID's time, which orders the list and which `from` and `to` compare. */
  receivedAt: string;
  /** When the gateway began relaying it (after its body was read), and when the call ended. */
  startedAt: string;
  endedAt: string;
  op: GatewayOp;
  method: string;
  /** The path as the client sent it. */
  path: string;
  /** The model as the client named it (an alias, a preset, a plain name); null for calls by response ID. */
  clientModel: string | null;
  /** The catalog model the call resolved to; null for calls by response ID. */
  modelId: string | null;
  providerId: string;
  credentialId: string | null;
  tokenId: string;
  session: string | null;
  outcome: RequestLogOutcome;
  /** The status the client got (499 when it left before its answer). */
  status: number;
  /** The error code of a failed call, else null. */
  errorCode: string | null;
  stream: boolean;
  /** From the start of the relay to the answer's head; null when none came. */
  firstByteMs: number | null;
  durationMs: number;
  usage: UsageReport | null;
  /** What the upstream said the call cost, in USD (the usage event's); null when it said nothing. */
  costUsd: number | null;
  route?: UsageRoute;
}

export interface RequestLogEntry extends RequestLogItem {
  /** The query string, secrets redacted. */
  query: string;
  request: { headers: Record<string, string>; body: RequestLogBody };
  response: { headers: Record<string, string>; body: RequestLogBody };
  /** A failed call's error, its message redacted. */
  error: { code: string; message: string } | null;
}

export interface RequestLogFilter {
  session?: string;
  /** Matches the client's model name or the resolved model ID. */
  model?: string;
  outcome?: RequestLogOutcome;
  status?: number;
  /** Milliseconds since the epoch, both inclusive, of `receivedAt`. */
  from?: number;
  to?: number;
  limit: number;
  /** The last ID of the page before: the next page starts below it. */
  cursor?: string;
}

export interface RequestLogPage {
  data: RequestLogItem[];
  /** Pass as `cursor` for the next page; null at the end. */
  nextCursor: string | null;
}

// POST /v1/requests/{id}/replay: the logged request again on another model or preset (service/request-replay.ts).
export const ReplayRequestSchema = Type.Object(
  // As a gateway body's `model`: a catalog ID, an alias, `@preset/...`, `@route/...` or a plain name.
  { model: Type.String({ minLength: 1, maxLength: 1024 }) },
  { additionalProperties: false },
);
export type ReplayRequest = Static<typeof ReplayRequestSchema>;
export const checkReplayRequest = compile(ReplayRequestSchema);

/** One side of a replay: the model as named, the catalog model it resolved to, its usage and cost. */
export interface ReplayCall {
  model: string | null;
  modelId: string | null;
  usage: UsageReport | null;
  /** The upstream's reported cost, else the catalog's or the price database's estimate; null when unknown. */
  estimatedCostUsd: number | null;
}

export interface ReplayAnswer {
  /** The replay's own request ID: it is metered, and logged when the log is on, as any call. */
  replayRequestId: string;
  original: ReplayCall;
  replay: ReplayCall & { status: number };
  /** The replay's whole answer, as the gateway route answered it. */
  result: unknown;
  /** Replay minus original; null where either side is unknown. */
  difference: {
    inputTokens: number | null;
    outputTokens: number | null;
    totalTokens: number | null;
    estimatedCostUsd: number | null;
  };
}
