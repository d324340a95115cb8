import { ServiceError } from '../../protocol/errors.ts';
import { BYTES_PER_TOKEN_ESTIMATE, GATEWAY_OPS, type GatewayOp, type UsageReport } from '../../protocol/gateway.ts';
import type { ProviderKind } from '../../protocol/providers.ts';
import { jsonText } from '../../protocol/json-text.ts';
import type { ModelPricing } from '../../protocol/http/catalog.ts';
import { LIMIT_BOUNDS, type LimitMetric } from '../../protocol/http/limits.ts';
import type { Ledger } from '../../protocol/ports/limits.ts';
import { type CalendarWindow, underWayAt, windowEndOf, windowStartOf } from '../../protocol/limit-windows.ts';
import type { ActiveLimit, AdmissionSource, BrakeSource } from '../../protocol/ports/limits.ts';
import type { Principal } from '../../protocol/principal.ts';
import { estimateCostUsd } from '../../protocol/pricing.ts';
import { parseJsonBody } from '../http/json-body.ts';
import type { RouteContext } from '../http/router.ts';
import { lastToolCall, type ToolCallSignature } from './tool-repeat.ts';

// Admission (docs/api.md, Limits): before a call goes upstream it reserves its worst case against every enabled
// limit whose scope it is in, and is refused with 429 LIMIT_EXCEEDED when one does not fit. When the call ends
// the reservation settles to what was metered. With no limit enabled this is one array length check.

/** Output tokens reserved for a call that names no `max_tokens` (nor `max_completion_tokens`, `max_output_tokens`). */
export const DEFAULT_MAX_OUTPUT = 4096;
/** Input tokens are reserved as the body's bytes over this (protocol/gateway.ts). */
export const BYTES_PER_INPUT_TOKEN = BYTES_PER_TOKEN_ESTIMATE;
/**
 * Headers an agent names its session by, in order: Claude Code's, Codex CLI's (`session-id` since 0.171,
 * `session_id` before), and a plain one for other tools.
 */
export const SESSION_HEADERS = ['x-claude-code-session-id', 'session-id', 'session_id', 'x-session-id'] as const;
const NANO = 1e9;
const iso = (ms: number) => new Date(ms).toISOString();
/** When a Gauge window's reading says no reset time: look again in a minute (Gauge reads again by then). */
const GAUGE_RETRY_MS = 60_000;

/** What admission needs to know of a call. */
export interface CallFacts {
  principal: Principal;
  headers: Readonly<Record<string, string | undefined>>;
  packSlug: string | null;
  /** The provider credential the call uses (a `credential` limit's scope); absent or null: none. */
  credentialId?: string | null;
  /** Whether its tokens count (metered operations); otherwise only `requests` limits apply. */
  metered: boolean;
  bodyBytes: number;
  /** The body's output bound, when it names one. */
  maxOutput: number | null;
  /**
   * Whether the gateway can send the reservation's output bound upstream when the body names none (see
   * `Reservation.outputCap`): then a call that does not fit at the default bound may be admitted at a smaller one.
   */
  cappable?: boolean;
  /**
   * The model whose USD price a `usd` limit reserves by (null counts nothing: local runtimes, unpriced models), or
   * a function giving a route pack's routes' prices: the call is reserved at the dearest worst case among them.
   * Asked only under a `usd` limit.
   */
  priced: string | null | (() => (ModelPricing | null)[]);
  /** The call's last tool call, asked only while the loop brake is on (tool-repeat.ts). */
  toolCall?(): ToolCallSignature | null;
}

export interface Reservation {
  /** How many limits the call holds room under. */
  count: number;
  /**
   * Per limit, four entries: its ledger slot, the window start, the need reserved and the metric. One array sized
   * to the active limits: the separate arrays this was cost ~600 bytes of allocation a call (bench/RESULTS.md).
   */
  held: (number | bigint | LimitMetric)[];
  /** The prices the call was reserved at (one, or a pack's routes'); empty without a `usd` limit. */
  pricing: (ModelPricing | null)[];
  /**
   * The output bound the call was reserved at, to be sent upstream, when its body names none and a token or
   * dollar limit applies: the upstream then ends the answer there with its own stop (finish_reason `length`,
   * stop_reason `max_tokens`), metered, and the call cannot pass its reservation by talking on. Null otherwise.
   */
  outputCap: number | null;
}

/** Whether a `new_sessions` gate's mark of `session` (in the gate's slot) says it is under way (underWayAt). */
function underWay(ledger: Ledger, gateId: string, session: string, now: number): boolean {
  const slot = ledger.peek(gateId, session);
  return slot >= 0 && underWayAt(ledger.read(slot).windowStart, now);
}

/** Below this many output tokens a call is refused rather than admitted with a shorter bound. */
export const MIN_OUTPUT_CAP = 256;

/** The session an agent names, bounded and reduced to characters safe in a key and a log line; null if none. */
export function sessionKeyOf(headers: Readonly<Record<string, string | undefined>>): string | null {
  for (const name of SESSION_HEADERS) {
    const value = headers[name]?.trim();
    if (value) return value.slice(0, LIMIT_BOUNDS.scopeIdMax).replace(/[^A-Za-z0-9._:@-]/g, '_');
  }
  return null;
}

/** The key a call counts under for `limit`, or null when the call is outside its scope. */
/** `session`: the call's session (sessionKeyOf), read before for a `session` limit, else unused. */
function keyOf(limit: ActiveLimit, facts: CallFacts, session: string | null | undefined): string | null {
  const { scope } = limit.record;
  switch (scope.kind) {
    case 'service':
      return '*';
    case 'token':
      return scope.id === facts.principal.tokenId ? scope.id : null;
    case 'service_account':
      return scope.id !== null && scope.id === facts.principal.serviceAccountId ? scope.id : null;
    case 'route_pack':
      return scope.id !== null && scope.id === facts.packSlug ? scope.id : null;
    case 'credential':
      return scope.id !== null && scope.id === facts.credentialId ? scope.id : null;
    case 'session':
      return session != null && (scope.id === null || scope.id === session) ? session : null;
  }
}

/** The input a call is reserved at: its body's bytes over BYTES_PER_INPUT_TOKEN. */
const inputTokensOf = (facts: CallFacts) => Math.ceil(facts.bodyBytes / BYTES_PER_INPUT_TOKEN);

/** The usage a worst case is priced as: one object, filled per call (admission is synchronous). */
const WORST = { inputTokens: 0, outputTokens: 0, cachedInputTokens: 0, cacheWriteTokens: 0, cacheWrite1hTokens: 0 };

function worstCase(metric: LimitMetric, facts: CallFacts, prices: (ModelPricing | null)[], output: number): bigint {
  if (metric === 'requests') return 1n;
  if (!facts.metered) return 0n;
  const input = inputTokensOf(facts);
  if (metric === 'input_tokens') return BigInt(input);
  if (metric === 'output_tokens') return BigInt(output);
  if (metric === 'total_tokens') return BigInt(input + output);
  WORST.inputTokens = input;
  WORST.outputTokens = output;
  // Whichever route answers: the dearest of this call's worst cases.
  let usd = 0;
  for (const pricing of prices) usd = Math.max(usd, estimateCostUsd(WORST, pricing) ?? 0);
  return BigInt(Math.ceil(usd * NANO));
}

/**
 * The most output tokens that fit in `room` (in the limit's unit) beside the call's input; 0 when none does or
 * the metric does not depend on output.
 */
function outputThatFits(metric: LimitMetric, facts: CallFacts, prices: (ModelPricing | null)[], room: bigint): number {
  if (room <= 0n) return 0;
  const input = inputTokensOf(facts);
  if (metric === 'output_tokens') return Number(room);
  if (metric === 'total_tokens') return Math.max(0, Number(room) - input);
  if (metric !== 'usd') return 0;
  // The bound must fit at every route's price: the least of what fits at each.
  let fits = Number.POSITIVE_INFINITY;
  for (const pricing of prices) {
    if (pricing === null || pricing.outputPerMTok <= 0) continue;
    const inputUsd = (input * pricing.inputPerMTok) / 1e6;
    fits = Math.min(fits, Math.max(0, Math.floor(((Number(room) / NANO - inputUsd) * 1e6) / pricing.outputPerMTok)));
  }
  return Number.isFinite(fits) ? fits : 0;
}

function used(metric: LimitMetric, usage: UsageReport | null, pricing: ModelPricing | null): bigint {
  if (metric === 'requests') return 1n;
  if (usage === null) return 0n;
  const input = usage.inputTokens ?? 0;
  const output = usage.outputTokens ?? 0;
  if (metric === 'input_tokens') return BigInt(input);
  if (metric === 'output_tokens') return BigInt(output);
  if (metric === 'total_tokens') return BigInt(usage.totalTokens ?? input + output);
  // Priced as usage is: the provider's reported cost where it gave one, else the estimate at the model's price.
  const usd = usage.costUsd ?? estimateCostUsd(usage, pricing) ?? 0;
  return BigInt(Math.max(0, Math.ceil(usd * NANO)));
}

export interface Admission {
  /** True while no limit is enabled: the gateway then builds nothing for admission. */
  idle(): boolean;
  /** True while the loop brake is on: only then does a call's last tool call need reading. */
  braking(): boolean;
  /** Reserves the call's worst case under every limit that applies; null when none does. Throws when one is full. */
  admit(facts: CallFacts): Reservation | null;
  /**
   * Settles to what was metered, a dollar limit at the price of `modelId`, the model that answered (a pack's
   * route), as usage prices it; without it, at the price the call was reserved at.
   */
  settle(reservation: Reservation, usage: UsageReport | null, modelId?: string | null): void;
  /** Gives a reservation back uncounted: the call never went upstream. */
  release(reservation: Reservation): void;
}

/** Refuses a call that a limit has no room for, naming the limit, its window and when it resets. */
function refuse(
  source: AdmissionSource,
  limit: ActiveLimit,
  key: string,
  start: number,
  resetsAt: number,
  need: bigint,
): never {
  const { record } = limit;
  source.tripped(record, key, start, resetsAt);
  const seconds = Math.max(1, Math.ceil((resetsAt - source.now()) / 1000));
  const whole = need > limit.max;
  const reached =
    record.window === 'gauge'
      ? `Limit \`${record.name}\`: the Gauge window \`${record.gauge!.windowId}\` is ${record.max}% used or more` +
        (record.gauge!.stops === 'new_sessions' ? ', and this call is not of a session under way' : '')
      : `Limit \`${record.name}\` is reached for this ${record.window}`;
  return fail(
    whole
      ? `This call's worst case is more than the whole of limit \`${record.name}\`; ask for fewer output tokens.`
      : `${reached}; it resets at ${iso(resetsAt)}.`,
    {
      limitId: record.id,
      limitName: record.name,
      scope: record.scope.kind,
      window: record.window,
      metric: record.metric,
      resetsAt: iso(resetsAt),
    },
    whole ? null : seconds,
  );
}

/** Refuses the calls of a paused session, and the call that repeats its tool call once too often. */
function brake(b: BrakeSource, session: string | null, facts: CallFacts): void {
  if (session === null) return;
  let paused = b.isPaused(session);
  if (paused === null) {
    const call = facts.toolCall?.() ?? null;
    if (call === null || !b.observe(session, call.signature, call.tool)) return;
    paused = b.isPaused(session)!;
  }
  throw new ServiceError(
    'SESSION_PAUSED',
    `Session \`${session}\` is paused: it repeated \`${paused.tool}\` with the same arguments ` +
      `${paused.repeats} times. A person resumes it: POST /v1/limits/sessions/{id}/resume.`,
    { details: { session, tool: paused.tool, repeats: paused.repeats, pausedAt: paused.pausedAt } },
  );
}

function fail(message: string, details: Record<string, unknown>, retryAfter: number | null): never {
  throw new ServiceError('LIMIT_EXCEEDED', message, {
    details,
    headers: retryAfter === null ? {} : { 'retry-after': String(retryAfter) },
  });
}

/** The current window of each calendar kind: its start and end are worked out once per window, not per call. */
function calendarWindows(): (kind: CalendarWindow, now: number) => { start: number; end: number } {
  const windows = new Map<CalendarWindow, { start: number; end: number }>();
  return (kind, now) => {
    let w = windows.get(kind);
    if (w === undefined || now < w.start || now >= w.end) {
      const start = windowStartOf(kind, now);
      windows.set(kind, (w = { start, end: windowEndOf(kind, start) }));
    }
    return w;
  };
}

export function createAdmission(
  source: AdmissionSource,
  priceOf: (modelId: string) => ModelPricing | null = () => null,
): Admission {
  const { ledger } = source;
  const NO_PRICE: (ModelPricing | null)[] = [];
  const pricesFor = (priced: CallFacts['priced']): (ModelPricing | null)[] =>
    priced === null ? NO_PRICE : typeof priced === 'string' ? [priceOf(priced)] : priced();
  const windowOf = calendarWindows();

  function release(r: Reservation): void {
    const { held } = r;
    for (let i = 0; i < r.count * 4; i += 4)
      ledger.settle(held[i] as number, held[i + 1] as number, held[i + 2] as bigint, 0n);
  }

  return {
    idle: () => source.active().length === 0 && source.brake?.active() !== true,
    braking: () => source.brake?.active() === true,
    admit(facts) {
      // No closure per call: the session and the price are read once, when a limit first needs them.
      let session: string | null | undefined;
      if (source.brake?.active()) brake(source.brake, (session = sessionKeyOf(facts.headers)), facts);
      const limits = source.active();
      if (limits.length === 0) return null;
      const now = source.now();
      let r: Reservation | null = null;
      let price: (ModelPricing | null)[] | undefined;
      // Without a bound in the body: the default, or less where a limit has room only for less (outputCap).
      let cap = facts.maxOutput === null && facts.cappable === true && facts.metered ? DEFAULT_MAX_OUTPUT : null;
      let capped = false;
      for (const limit of limits) {
        if (session === undefined && limit.record.scope.kind === 'session') session = sessionKeyOf(facts.headers);
        const key = keyOf(limit, facts, session);
        if (key === null) continue;
        const { record } = limit;
        if (record.window === 'gauge') {
          // A gate, not a counter: the provider's own window, as Gauge read it last (live headers or local logs).
          const share = source.gaugeShare(record.gauge!.accountId, record.gauge!.windowId);
          const newOnly = record.gauge!.stops === 'new_sessions';
          if (newOnly && session === undefined) session = sessionKeyOf(facts.headers);
          if (share === null || share.percent < record.max) {
            // Open: a session it admits is under way, and goes on once it shuts. A slot of the gate's marks it,
            // its window the hour the session was last admitted in.
            if (newOnly && typeof session === 'string') {
              const slot = ledger.slotOf(record.id, session);
              if (slot >= 0) ledger.mark(slot, windowOf('hour', now).start);
            }
            continue;
          }
          if (newOnly && typeof session === 'string' && underWay(ledger, record.id, session, now)) continue;
          if (r !== null) release(r);
          refuse(source, limit, key, now, share.resetsAt ?? now + GAUGE_RETRY_MS, 0n);
        }
        const { start, end } = windowOf(record.window, now);
        // A key that finds no slot (a table full of sessions) counts under its limit's overflow key.
        let slot = ledger.slotOf(record.id, key);
        if (slot < 0) slot = ledger.slotOf(record.id, '*overflow');
        if (price === undefined && record.metric === 'usd') price = pricesFor(facts.priced);
        const output = facts.maxOutput ?? cap ?? DEFAULT_MAX_OUTPUT;
        let need = worstCase(record.metric, facts, price ?? NO_PRICE, output);
        r ??= { count: 0, held: new Array(limits.length * 4), pricing: NO_PRICE, outputCap: null };
        let fits = slot >= 0 && ledger.reserve(slot, start, need, limit.max);
        if (!fits && slot >= 0 && cap !== null) {
          const { used: u, reserved } = ledger.read(slot);
          const room = outputThatFits(record.metric, facts, price ?? NO_PRICE, limit.max - u - reserved);
          if (room >= MIN_OUTPUT_CAP && room < cap) {
            cap = room;
            need = worstCase(record.metric, facts, price ?? NO_PRICE, cap);
            fits = ledger.reserve(slot, start, need, limit.max);
          }
        }
        if (record.metric !== 'requests' && cap !== null) capped = true;
        if (!fits) {
          release(r);
          if (slot < 0) fail('The limit counters are full; restart the service.', { limitId: record.id }, 60);
          // Whether it could ever fit: at the least bound the gateway would send, where it sends one.
          refuse(
            source,
            limit,
            key,
            start,
            end,
            cap === null ? need : worstCase(record.metric, facts, price ?? NO_PRICE, MIN_OUTPUT_CAP),
          );
        }
        const at = r.count++ * 4;
        r.held[at] = slot;
        r.held[at + 1] = start;
        r.held[at + 2] = need;
        r.held[at + 3] = record.metric;
        if (record.metric === 'usd') r.pricing = price ?? NO_PRICE;
      }
      if (r !== null && capped) r.outputCap = cap;
      return r;
    },
    release,
    settle(r, usage, modelId) {
      const { held } = r;
      let pricing: ModelPricing | null | undefined;
      source.enter?.();
      try {
        for (let i = 0; i < r.count * 4; i += 4) {
          const slot = held[i] as number;
          const start = held[i + 1] as number;
          const metric = held[i + 3] as LimitMetric;
          if (metric === 'usd' && pricing === undefined)
            pricing = modelId != null ? priceOf(modelId) : r.pricing.length === 1 ? r.pricing[0]! : dearest(r.pricing);
          const use = used(metric, usage, pricing ?? null);
          ledger.settle(slot, start, held[i + 2] as bigint, use);
          if (use !== 0n) source.settled?.(slot, start, use);
        }
      } finally {
        source.exit?.();
      }
      source.journal?.();
    },
  };
}

/** What a route knows of a call when it asks for admission (admitCall). */
export interface CallAsk {
  op: GatewayOp;
  /** The model whose price a dollar limit reserves by, a pack's routes' prices, or null (CallFacts.priced). */
  priced: CallFacts['priced'];
  bodyBytes: number;
  maxOutput: number | null;
  packSlug?: string | null;
  /** The body when the call may carry a tool call for the loop brake (null: parsed if the brake asks for it). */
  json?: Record<string, unknown> | null;
  /** Whether the gateway may send the reserved output bound upstream (CAPPABLE). */
  cappable?: boolean;
  /** The provider key the call uses, for `credential` limits. */
  credentialId?: string | null;
}

/**
 * Admission for one gateway call, its facts read from the request and `ask`. With no limit and the brake off this
 * returns at once and builds nothing.
 */
export function admitCall(admission: Admission, ctx: RouteContext<unknown>, ask: CallAsk): Reservation | null {
  if (admission.idle()) return null;
  const { op, json } = ask;
  const { metered } = GATEWAY_OPS[op];
  const { headers, body } = ctx.req;
  // A closure only while the loop brake is on; with limits alone the facts are one plain object.
  const toolCall =
    json === undefined || !admission.braking()
      ? undefined
      : () => lastToolCall(op, json ?? (parseJsonBody(body, headers['content-type']) as Record<string, unknown>));
  return admission.admit({
    principal: ctx.principal!,
    headers,
    packSlug: ask.packSlug ?? null,
    metered,
    bodyBytes: ask.bodyBytes,
    maxOutput: ask.maxOutput,
    priced: ask.priced,
    toolCall,
    cappable: ask.cappable === true,
    credentialId: ask.credentialId ?? null,
  });
}

/** The dearest of some prices (input plus output per million tokens); null when none is known. */
function dearest(prices: (ModelPricing | null)[]): ModelPricing | null {
  let top: ModelPricing | null = null;
  for (const p of prices) {
    if (p !== null && (top === null || p.inputPerMTok + p.outputPerMTok > top.inputPerMTok + top.outputPerMTok))
      top = p;
  }
  return top;
}

/** The operations whose body the gateway can give an output bound (directly, through a preset or a pack). */
export const CAPPABLE: ReadonlySet<GatewayOp> = new Set<GatewayOp>(['chat.completions', 'responses.create']);

/**
 * The body with the reservation's output bound, as text for the relay: `max_output_tokens` for responses; for
 * chat, `max_completion_tokens` to OpenAI (its reasoning models refuse `max_tokens`), `max_tokens` to the others
 * (llama-server, Ollama, vLLM and OpenRouter read it; a translation to Messages reads either).
 */
export function withOutputCap(op: GatewayOp, kind: ProviderKind, body: unknown, cap: number): string {
  const field =
    op === 'responses.create' ? 'max_output_tokens' : kind === 'openai' ? 'max_completion_tokens' : 'max_tokens';
  // jsonText: a client's body may nest deeper than JSON.stringify's recursion reaches.
  return jsonText({ ...(body as Record<string, unknown>), [field]: cap });
}
