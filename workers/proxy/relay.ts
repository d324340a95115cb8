import { Readable } from 'node:stream';
import { Agent, request, type Dispatcher } from 'undici';
import { ServiceError, toServiceError } from '../../protocol/errors.ts';
import { GATEWAY_OPS } from '../../protocol/gateway.ts';
import { KINDS, PROVIDER_KINDS, type ProviderKind } from '../../protocol/providers.ts';
import type { FromWorker, RelayEnd, RelayRequest } from '../../protocol/relay.ts';
import { credentialOf } from './credentials.ts';
import { filterResponseHeaders } from './header-policy.ts';
import { ADAPTERS } from './providers/index.ts';
import { requestHeaders } from './providers/request.ts';
import { fromTransportError, fromUpstreamStatus, type UpstreamContext } from './upstream-errors.ts';
import { createUsageCollector, type UsageResult } from './usage/collectors.ts';
import { createStreamTap, injectStreamUsage } from './usage/stream-tap.ts';

// One relayed call, inside a proxy worker: build the upstream request, send it with undici, and hand the
// answer to the edge as messages. A non-streamed answer travels as one message; a stream as chunks
// coalesced per event-loop turn, paused while the client's socket is full.

export type Post = (message: FromWorker, transfer?: ArrayBuffer[]) => void;

const MAX_WHOLE_BYTES = 256 * 1024 * 1024;
const MAX_ERROR_BYTES = 64 * 1024;

const agents = new Map<number, Agent>();
function agentFor(connectMs: number): Dispatcher {
  let agent = agents.get(connectMs);
  if (!agent) {
    // No per-origin connection cap: many agents streaming at once each hold one upstream connection.
    agent = new Agent({ connect: { timeout: connectMs }, keepAliveTimeout: 30_000 });
    agents.set(connectMs, agent);
  }
  return agent;
}

const HINTS = new Map<ProviderKind, ReadonlyMap<string, string>>(
  PROVIDER_KINDS.map((k) => [k, new Map((KINDS[k].hints as readonly string[]).map((h) => [h.toLowerCase(), h]))]),
);

/** Relay state the worker's message loop drives: abort, pause/resume, upload chunks. */
export class RelayControl {
  readonly abort = new AbortController();
  private paused = false;
  private wake: (() => void) | null = null;
  private upload: (ArrayBuffer | null)[] = [];
  private uploadWake: (() => void) | null = null;

  pause(): void {
    this.paused = true;
  }
  resume(): void {
    this.paused = false;
    this.wake?.();
    this.wake = null;
  }
  async whilePaused(): Promise<void> {
    while (this.paused && !this.abort.signal.aborted) await new Promise<void>((r) => (this.wake = r));
  }
  pushUpload(chunk: ArrayBuffer | null): void {
    this.upload.push(chunk);
    this.uploadWake?.();
    this.uploadWake = null;
  }
  /** The streamed upload as undici's request body; each chunk is acknowledged once undici took it. */
  async *uploadBody(ack: (bytes: number) => void): AsyncGenerator<Uint8Array> {
    for (;;) {
      while (this.upload.length === 0) await new Promise<void>((r) => (this.uploadWake = r));
      const chunk = this.upload.shift()!;
      if (chunk === null) return;
      yield new Uint8Array(chunk);
      ack(chunk.byteLength);
    }
  }
  cancelWaits(): void {
    this.wake?.();
    this.uploadWake?.();
  }
}

/** Sets the upstream model and, for a streamed chat, asks for usage. Returns the body and whether usage was injected. */
function upstreamBody(req: RelayRequest, streamUsage: boolean): { body: string; stream: boolean; injected: boolean } {
  const text = Buffer.from(req.body!).toString('utf8');
  const json = JSON.parse(text) as Record<string, unknown>;
  if (req.upstreamModelId !== null && 'model' in json) json.model = req.upstreamModelId;
  const stream = json.stream === true;
  const injected = req.op === 'chat.completions' && stream && streamUsage && injectStreamUsage(json);
  return { body: JSON.stringify(json), stream, injected };
}

/** The collector's result as the relay reports it: the usage alone, and the response ID beside it. */
function relayEnd({ responseId, ...usage }: UsageResult): RelayEnd {
  return { usage, responseId };
}

/** Copies undici's pooled chunk into a buffer of its own, which can then be transferred, not cloned. */
function own(chunk: Uint8Array): ArrayBuffer {
  const copy = new Uint8Array(chunk.byteLength);
  copy.set(chunk);
  return copy.buffer;
}

async function readAll(body: Dispatcher.ResponseData['body'], max: number): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.byteLength;
    if (size > max) {
      body.destroy();
      throw new ServiceError('UPSTREAM_ERROR', 'The provider answered with a body over the size limit.', { details: { limitBytes: max } });
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
}

export async function relay(id: number, req: RelayRequest, control: RelayControl, post: Post): Promise<void> {
  const gateway = ADAPTERS[req.target.kind].gateway;
  const url = gateway?.url(req.op, req.target, req.params, req.query) ?? null;
  let headSent = false;
  let tapUsage: UsageResult | null = null;
  let context: UpstreamContext = { providerId: req.target.id, credential: null };
  try {
    if (gateway === null || url === null) {
      throw new ServiceError('MODEL_ENDPOINT_NOT_SUPPORTED', `A ${req.target.kind} provider does not serve ${GATEWAY_OPS[req.op].path}.`, { param: 'model' });
    }
    const credential = await credentialOf(req.credentialRef);
    context = { providerId: req.target.id, credential };
    const adapter = ADAPTERS[req.target.kind];
    const forwarded: Record<string, string> = {};
    for (const [name, value] of Object.entries(req.headers)) forwarded[HINTS.get(req.target.kind)?.get(name) ?? name] = value;
    // Record hints, then the client's protocol headers and hints, then authentication last: nothing a
    // client sends can replace the credential headers.
    const headers: Record<string, string> = {
      ...requestHeaders(req.target, {}),
      ...forwarded,
      'x-service-request-id': req.requestId,
      ...adapter.authHeaders(credential),
    };
    // The protocol version is the client's choice when it states one; the adapter's is only a default.
    if (req.headers['anthropic-version'] !== undefined) headers['anthropic-version'] = req.headers['anthropic-version'];
    let body: string | Readable | undefined;
    let injected = false;
    if (req.bodyStreamed) {
      body = Readable.from(control.uploadBody((bytes) => post({ t: 'ack', id, bytes })), { objectMode: false });
    } else if (req.body !== null) {
      const prepared = upstreamBody(req, gateway.streamUsage);
      body = prepared.body;
      injected = prepared.injected;
      headers['content-type'] = 'application/json';
    }
    let res: Dispatcher.ResponseData;
    try {
      res = await request(url, {
        method: GATEWAY_OPS[req.op].method,
        headers,
        body,
        signal: control.abort.signal,
        dispatcher: agentFor(req.target.timeouts.connectMs),
        headersTimeout: req.target.timeouts.headMs,
        bodyTimeout: req.target.timeouts.idleMs,
      });
    } catch (err) {
      throw fromTransportError(err, context) ?? err;
    }
    if (res.statusCode >= 400) {
      const text = (await readAll(res.body, MAX_ERROR_BYTES).catch(() => Buffer.alloc(0))).toString('utf8');
      const error = fromUpstreamStatus(res.statusCode, res.headers, text, context);
      // An upstream 4xx is the client's to fix: it keeps its status (docs/api.md).
      const keep = error.code === 'UPSTREAM_ERROR' && res.statusCode < 500;
      throw keep ? new ServiceError(error.code, error.message, { details: error.details, status: res.statusCode }) : error;
    }
    const outHeaders = filterResponseHeaders(res.headers);
    const contentType = String(res.headers['content-type'] ?? '');
    if (contentType.includes('text/event-stream') || !contentType.includes('json')) {
      // A stream (SSE) or binary media (speech): relayed as it arrives.
      post({ t: 'head', id, status: res.statusCode, headers: outHeaders });
      headSent = true;
      const tap = createStreamTap(req.op, { stripInjectedUsage: injected, providerKind: req.target.kind });
      let pending: ArrayBuffer[] = [];
      let scheduled = false;
      const flush = () => {
        scheduled = false;
        if (pending.length === 0) return;
        const chunks = pending;
        pending = [];
        post({ t: 'data', id, chunks }, chunks);
      };
      try {
        let named = req.op !== 'responses.create' && req.op !== 'responses.compact';
        for await (const chunk of res.body as AsyncIterable<Uint8Array>) {
          const out = tap.push(chunk);
          if (!named) {
            const responseId = tap.responseId();
            if (responseId !== null) {
              named = true;
              post({ t: 'created', id, responseId });
            }
          }
          if (out !== null && out.byteLength > 0) {
            pending.push(own(out));
            if (!scheduled) {
              scheduled = true;
              setImmediate(flush);
            }
          }
          await control.whilePaused();
        }
      } catch (err) {
        flush();
        tapUsage = tap.end().usage;
        throw fromTransportError(err, context) ?? err;
      }
      const { tail, usage } = tap.end();
      if (tail !== null && tail.byteLength > 0) pending.push(own(tail));
      const last = pending;
      pending = [];
      post({ t: 'end', id, end: relayEnd(usage), chunks: last }, last);
      return;
    }
    const whole = await readAll(res.body, MAX_WHOLE_BYTES).catch((err: unknown) => {
      throw fromTransportError(err, context) ?? err;
    });
    let out: Buffer = whole;
    const collector = createUsageCollector(req.op, { providerKind: req.target.kind });
    let parsed: unknown;
    if (GATEWAY_OPS[req.op].metered || req.op === 'rerank') {
      try {
        parsed = JSON.parse(whole.toString('utf8'));
      } catch {
        throw new ServiceError('UPSTREAM_ERROR', 'The provider answered with malformed JSON.', { details: { providerId: req.target.id } });
      }
      collector.json(parsed);
      if (gateway.normalize && req.op === 'rerank') out = Buffer.from(JSON.stringify(gateway.normalize(req.op, parsed, req.clientModel ?? '')));
    }
    const buffer = own(out);
    post({ t: 'whole', id, status: res.statusCode, headers: outHeaders, body: buffer, end: relayEnd(collector.result()) }, [buffer]);
  } catch (err) {
    if (control.abort.signal.aborted) return; // the client left; nobody is listening
    const error = toServiceError(err instanceof Error && !(err instanceof ServiceError) ? (fromTransportError(err, context) ?? err) : err);
    post({ t: 'error', id, error: error.toPayload(), usage: headSent && tapUsage !== null ? relayEnd(tapUsage).usage : null });
  }
}
