import { ServiceError } from '../protocol/errors.ts';
import { GATEWAY_OPS, type UsageEvent, type UsageReport } from '../protocol/gateway.ts';
import type { ReplayAnswer, ReplayCall, RequestLogEntry } from '../protocol/http/request-log.ts';
import type { ModelPricing } from '../protocol/http/catalog.ts';
import { estimateCostUsd } from '../protocol/pricing.ts';
import type { Principal } from '../protocol/principal.ts';
import { newRequestId } from '../edge/http/request-id.ts';
import type { RouteDef, RouteResult } from '../edge/http/router.ts';

// POST /v1/requests/{id}/replay (docs/api.md, Request log): a logged call's request again, with another model
// or preset in its body's `model`, through the gateway route it went through the first time, as the caller (its
// token's scopes and limits apply, and the replay is metered and logged as any call). Whole, not streamed: the
// answer is the replay's result beside both calls' usage and cost and their difference.

/** How long the replay waits for its usage event after its answer (it follows within the same turn or two). */
const USAGE_WAIT_MS = 5_000;

export interface ReplayDeps {
  entry(id: string): Promise<RequestLogEntry>;
  /** The main thread's gateway routes, by `METHOD /path` as the route table spells them. */
  route(name: string): RouteDef | undefined;
  onUsage(listener: (event: UsageEvent) => void): () => void;
  priceOf(modelId: string): ModelPricing | null;
}

export function createReplay(deps: ReplayDeps) {
  return async function replay(id: string, model: string, principal: Principal): Promise<ReplayAnswer> {
    const entry = await deps.entry(id);
    const spec = GATEWAY_OPS[entry.op];
    const def = deps.route(`${spec.method} ${spec.path}`);
    if (spec.body !== 'json' || def === undefined)
      throw new ServiceError('INVALID_REQUEST', `A \`${entry.op}\` call cannot be replayed; JSON calls can.`, {
        param: 'id',
      });
    const body = replayBody(entry, model);
    const requestId = newRequestId();
    const usage = usageOf(requestId);
    let result: RouteResult;
    try {
      result = await def.handle({
        req: {
          method: spec.method,
          path: spec.path,
          query: '',
          headers: { ...entry.request.headers, 'content-type': 'application/json' },
          body: Buffer.from(JSON.stringify(body)),
        },
        requestId,
        principal,
        params: {},
        body: null,
        bodyStream: null,
        onAbort: () => undefined,
      });
    } catch (err) {
      usage.cancel();
      throw err;
    }
    const answer = await wholeOf(result);
    const event = await usage.event;
    return {
      replayRequestId: requestId,
      original: call(entry.clientModel, entry.modelId, entry.usage, deps.priceOf),
      replay: { ...call(model, event?.modelId ?? null, event?.usage ?? null, deps.priceOf), status: answer.status },
      result: answer.body,
      difference: difference(entry.usage, event?.usage ?? null, entry.modelId, event?.modelId ?? null, deps.priceOf),
    };
  };

  function usageOf(requestId: string): { event: Promise<UsageEvent | null>; cancel(): void } {
    let stop: () => void = () => undefined;
    const event = new Promise<UsageEvent | null>((resolve) => {
      const timer = setTimeout(() => finish(null), USAGE_WAIT_MS);
      const off = deps.onUsage((e) => e.requestId === requestId && finish(e));
      function finish(e: UsageEvent | null) {
        clearTimeout(timer);
        off();
        resolve(e);
      }
      stop = () => finish(null);
    });
    return { event, cancel: () => stop() };
  }
}

/** The logged body with the new model, and whole: a replay answers once. */
function replayBody(entry: RequestLogEntry, model: string): Record<string, unknown> {
  const { text, truncated } = entry.request.body;
  if (text === null || truncated)
    throw new ServiceError(
      'INVALID_REQUEST',
      'The log did not keep this call’s whole request body; it cannot be replayed.',
      {
        param: 'id',
      },
    );
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = null;
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new ServiceError('INVALID_REQUEST', 'The logged request body is not a JSON object; it cannot be replayed.', {
      param: 'id',
    });
  const { stream: _stream, stream_options: _options, ...rest } = parsed as Record<string, unknown>;
  return { ...rest, model };
}

async function wholeOf(result: RouteResult): Promise<{ status: number; body: unknown }> {
  const status = result.status ?? 200;
  if (result.raw !== undefined) {
    const text = typeof result.raw === 'string' ? result.raw : Buffer.from(result.raw).toString('utf8');
    try {
      return { status, body: JSON.parse(text) };
    } catch {
      return { status, body: text };
    }
  }
  if (result.stream === undefined) return { status, body: result.body ?? null };
  // Not asked for, but a route may still stream: its bytes are the result, as text.
  const chunks: string[] = [];
  return new Promise((resolve) => {
    result.stream!({
      head: () => true,
      write(chunk) {
        chunks.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
        return true;
      },
      end(chunk) {
        if (chunk !== undefined) chunks.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('utf8'));
        resolve({ status, body: chunks.join('') });
      },
      abort: () => resolve({ status, body: chunks.join('') }),
      onWritable: () => undefined,
      onAbort: () => undefined,
    });
  });
}

function call(
  model: string | null,
  modelId: string | null,
  usage: UsageReport | null,
  priceOf: ReplayDeps['priceOf'],
): ReplayCall {
  return { model, modelId, usage, estimatedCostUsd: costOf(usage, modelId, priceOf) };
}

function costOf(usage: UsageReport | null, modelId: string | null, priceOf: ReplayDeps['priceOf']): number | null {
  if (usage === null || modelId === null) return null;
  return usage.costUsd ?? estimateCostUsd(usage, priceOf(modelId));
}

function difference(
  before: UsageReport | null,
  after: UsageReport | null,
  beforeModel: string | null,
  afterModel: string | null,
  priceOf: ReplayDeps['priceOf'],
): ReplayAnswer['difference'] {
  const minus = (a: number | null | undefined, b: number | null | undefined) =>
    a === null || a === undefined || b === null || b === undefined ? null : a - b;
  return {
    inputTokens: minus(after?.inputTokens, before?.inputTokens),
    outputTokens: minus(after?.outputTokens, before?.outputTokens),
    totalTokens: minus(after?.totalTokens, before?.totalTokens),
    estimatedCostUsd: minus(costOf(after, afterModel, priceOf), costOf(before, beforeModel, priceOf)),
  };
}
