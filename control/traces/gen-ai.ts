import type { Catalog, ProviderRecord } from '../../protocol/catalog.ts';
import type { GatewayOp, UsageAttempt, UsageEvent } from '../../protocol/gateway.ts';
import { KINDS, type ProviderKind } from '../../protocol/providers.ts';
import type { SpanPlan, SpanValue } from '../../protocol/traces.ts';

// A gateway call's spans as the OpenTelemetry GenAI semantic conventions name them (gen-ai-spans.md, "Inference"),
// planned from its usage event alone: plain data, so the SDK (workers/traces/otlp-pipeline.ts, on the traces
// thread) only copies it. docs/api.md, Traces, lists every attribute and where it comes from.

export type { SpanPlan, SpanValue };

/** The conventions' well-known operation names; the gateway's own op where none applies (a custom value). */
const OPERATIONS = {
  'chat.completions': 'chat',
  messages: 'chat',
  'responses.create': 'chat',
  embeddings: 'embeddings',
  'responses.input_tokens': 'responses.input_tokens',
  'responses.compact': 'responses.compact',
  'responses.get': 'responses.get',
  'responses.delete': 'responses.delete',
  'responses.input_items': 'responses.input_items',
  'responses.cancel': 'responses.cancel',
  'images.generations': 'images.generations',
  'images.edits': 'images.edits',
  'audio.speech': 'audio.speech',
  'audio.transcriptions': 'audio.transcriptions',
  'messages.count_tokens': 'messages.count_tokens',
  rerank: 'rerank',
} satisfies Record<GatewayOp, string>;

/** `gen_ai.provider.name`: the conventions' well-known value for a kind, else the kind itself. */
const PROVIDER_NAMES = {
  openai: 'openai',
  anthropic: 'anthropic',
  openrouter: 'openrouter',
  openai_compatible: 'openai_compatible',
  ollama: 'ollama',
  llamacpp: 'llamacpp',
  embedded: 'embedded',
} satisfies Record<ProviderKind, string>;

/** `error.type` when the usage event says a call failed but carries no code (docs/api.md lists these). */
export const ERROR_OTHER = '_OTHER';
export const ERROR_ABORTED = 'aborted';

/** `@route/<slug>`: how a client names a route pack, the request model of the pack's parent span. */
const PACK_PREFIX = '@route/';

interface Target {
  provider: ProviderRecord | undefined;
  providerId: string;
  /** The catalog ID `<providerId>/<upstreamModelId>`; null for calls addressed by response ID. */
  modelId: string | null;
}

export function planSpans(event: UsageEvent, catalog: Catalog): SpanPlan {
  const target = { provider: catalog.provider(event.providerId), providerId: event.providerId, modelId: event.modelId };
  const operation = OPERATIONS[event.op];
  const error = event.outcome === 'ok' ? null : event.outcome === 'aborted' ? ERROR_ABORTED : ERROR_OTHER;
  const route = event.route;
  const failed = route?.failed ?? [];
  const started = failed[0]?.startedAt ?? event.startedAt ?? event.at;
  const call = span(operation, target, catalog, started, event.at, error);
  const a = call.attributes;
  if (route !== undefined) {
    a['gen_ai.request.model'] = `${PACK_PREFIX}${route.packSlug}`;
    call.name = `${operation} ${PACK_PREFIX}${route.packSlug}`;
    a['switchyard.route.pack'] = route.packSlug;
    a['switchyard.route.id'] = route.routeId;
    if (route.fallbackReason !== null) a['switchyard.route.fallback_reason'] = route.fallbackReason;
  }
  a['switchyard.request.id'] = event.requestId;
  a['switchyard.outcome'] = event.outcome;
  if (event.session !== undefined) a['gen_ai.conversation.id'] = event.session;
  usage(a, event);
  if (failed.length > 0) {
    call.children = failed.map((f) => attempt(operation, f, catalog));
    // The answering attempt starts when the one before it gave up: the pack moves on at once.
    const last = span(operation, target, catalog, failed.at(-1)!.endedAt, event.at, error);
    last.attributes['switchyard.route.id'] = route!.routeId;
    call.children.push(last);
  }
  return call;
}

function attempt(operation: string, f: UsageAttempt, catalog: Catalog): SpanPlan {
  const target = { provider: catalog.provider(f.providerId), providerId: f.providerId, modelId: f.modelId };
  const s = span(operation, target, catalog, f.startedAt, f.endedAt, f.code);
  s.attributes['switchyard.route.id'] = f.routeId;
  return s;
}

/** The attributes every span of a call has: what was called, where, and how it ended. */
function span(
  operation: string,
  t: Target,
  catalog: Catalog,
  startTime: number,
  endTime: number,
  error: string | null,
): SpanPlan {
  const kind = t.provider?.kind;
  const upstream = t.modelId === null ? null : upstreamModel(t.modelId, t.providerId, catalog);
  const attributes: Record<string, SpanValue> = {
    'gen_ai.operation.name': operation,
    'gen_ai.provider.name': kind === undefined ? t.providerId : PROVIDER_NAMES[kind],
    'switchyard.provider.id': t.providerId,
  };
  if (upstream !== null) {
    attributes['gen_ai.request.model'] = upstream;
    // The model the gateway resolved and sent; the usage event does not carry the answer's own `model`.
    if (error === null) attributes['gen_ai.response.model'] = upstream;
    attributes['switchyard.model.id'] = t.modelId!;
  }
  const server = t.provider === undefined ? null : serverOf(t.provider);
  if (server !== null) {
    attributes['server.address'] = server.address;
    attributes['server.port'] = server.port;
  }
  if (error !== null) attributes['error.type'] = error;
  return {
    name: upstream === null ? operation : `${operation} ${upstream}`,
    kind: kind !== undefined && KINDS[kind].location === 'in_process' ? 'internal' : 'client',
    startTime,
    endTime: Math.max(startTime, endTime),
    attributes,
    error,
    children: [],
  };
}

/**
 * Token counts as the conventions define them: input_tokens includes the cache reads and writes (the meter's
 * inputTokens already does, for styleB too: docs/api.md, Usage), each of which also has its own attribute.
 */
function usage(a: Record<string, SpanValue>, event: UsageEvent): void {
  const u = event.usage;
  if (u === null) return;
  if (u.inputTokens !== null) a['gen_ai.usage.input_tokens'] = u.inputTokens;
  if (u.outputTokens !== null) a['gen_ai.usage.output_tokens'] = u.outputTokens;
  if (u.cachedInputTokens !== null) a['gen_ai.usage.cache_read.input_tokens'] = u.cachedInputTokens;
  if (u.cacheWriteTokens != null) a['gen_ai.usage.cache_creation.input_tokens'] = u.cacheWriteTokens;
  if (u.reasoningTokens !== null) a['gen_ai.usage.reasoning.output_tokens'] = u.reasoningTokens;
}

function upstreamModel(modelId: string, providerId: string, catalog: Catalog): string {
  const model = catalog.get(modelId);
  if (model !== undefined) return model.upstreamModelId;
  // A model deleted since the call: its ID still names the upstream model after the provider's prefix.
  return modelId.startsWith(`${providerId}/`) ? modelId.slice(providerId.length + 1) : modelId;
}

// Parsed once per provider record: a record is replaced, never changed, when its base URL changes.
const servers = new WeakMap<ProviderRecord, { address: string; port: number } | null>();

function serverOf(provider: ProviderRecord): { address: string; port: number } | null {
  let server = servers.get(provider);
  if (server === undefined) {
    const base = provider.baseUrl ?? KINDS[provider.kind].defaultBaseUrl;
    server = null;
    if (base !== null) {
      try {
        const url = new URL(base);
        const port = url.port === '' ? (url.protocol === 'https:' ? 443 : 80) : Number(url.port);
        server = { address: url.hostname.replace(/^\[|\]$/g, ''), port };
      } catch {
        // A stored base URL always parses; an unparsable one only loses the attribute.
      }
    }
    servers.set(provider, server);
  }
  return server;
}
