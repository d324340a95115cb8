import { errorEnvelope, type ServiceError } from '../../protocol/errors.ts';
import type { UsageEvent } from '../../protocol/gateway.ts';
import { decodeTime } from '../../protocol/ids.ts';
import {
  REQUEST_LOG_BODY_CAP,
  type RequestLogBody,
  type RequestLogEntry,
  type RequestLogOutcome,
} from '../../protocol/http/request-log.ts';
import type { RequestLogSink } from '../../protocol/ports/request-log.ts';
import { redactSecrets } from '../../protocol/redact.ts';
import { chunkBytes, type Chunk } from '../../protocol/relay.ts';
import type { RouteContext } from '../http/router.ts';
import type { AnswerCapture } from './relay-response.ts';

// What the request log keeps of one call (docs/api.md, Request log), gathered on the thread that serves it: the
// client's body, copied before it is handed to a worker (a transfer detaches it, an arena slot is reused), and the
// answer's bytes as they reach the client (relay-response.ts calls the capture). Built only for a call whose token
// the log is on for; everything is decoded and redacted once, when the call is over.

/** Headers that carry a credential: never kept, whatever their value looks like. */
const SECRET_HEADERS = new Set([
  'authorization',
  'proxy-authorization',
  'x-api-key',
  'api-key',
  'x-goog-api-key',
  'x-service-token',
  'cookie',
  'set-cookie',
]);
/** Bounds of what a client or upstream names, so that one entry stays small beside its bodies. */
const HEADER_VALUE_MAX = 8192;
const NAME_MAX = 1024;
const PATH_MAX = 4096;
const STATUS_CLIENT_LEFT = 499;
const fatal = new TextDecoder('utf-8', { fatal: true });

/** Headers minus the credential carriers and any whose value holds something secret-shaped (protocol/redact.ts). */
export function keptHeaders(headers: Readonly<Record<string, string | undefined>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || SECRET_HEADERS.has(name)) continue;
    const bounded = value.slice(0, HEADER_VALUE_MAX);
    if (redactSecrets(bounded) !== bounded) continue;
    out[name] = bounded;
  }
  return out;
}

/** Kept bytes as redacted text: a cut at the cap may split a character, whose bytes are left out. */
function bodyOf(parts: Uint8Array[], bytes: number): RequestLogBody {
  const kept = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
  const truncated = bytes > kept.byteLength;
  for (let cut = 0; cut <= (truncated ? 3 : 0) && cut <= kept.byteLength; cut++) {
    try {
      const text = fatal.decode(kept.subarray(0, kept.byteLength - cut));
      return { text: redactSecrets(text), bytes, truncated };
    } catch {
      // Not UTF-8 at this cut: try one byte less, or it is not text.
    }
  }
  return { text: null, bytes, truncated, omitted: 'binary' };
}

/** Appends a side's bytes up to the cap, counting the rest. */
class Side {
  parts: Uint8Array[] = [];
  kept = 0;
  bytes = 0;
  add(data: Uint8Array): void {
    this.bytes += data.byteLength;
    const room = REQUEST_LOG_BODY_CAP - this.kept;
    if (room <= 0) return;
    // A copy: the view may be a worker's transferred buffer or a slot about to be reused.
    const part = Buffer.from(data.subarray(0, Math.min(room, data.byteLength)));
    this.parts.push(part);
    this.kept += part.byteLength;
  }
  body(): RequestLogBody {
    return bodyOf(this.parts, this.bytes);
  }
}

/** One call's capture: the request now, the answer through AnswerCapture, the entry at the end. */
export class RequestCapture implements AnswerCapture {
  private readonly request = new Side();
  private readonly requestHeaders: Record<string, string>;
  private readonly upload: boolean;
  private answer = new Side();
  private status = 0;
  private headers: Record<string, string> = {};
  private streamed = false;
  private failure: ServiceError | null = null;
  clientModel: string | null = null;

  constructor(private readonly ctx: RouteContext<unknown>) {
    this.requestHeaders = keptHeaders(ctx.req.headers);
    this.upload = ctx.bodyStream !== null;
    if (ctx.req.body !== null) this.request.add(ctx.req.body);
  }

  head(status: number, headers: Readonly<Record<string, string>>, streamed: boolean): void {
    // An earlier attempt (another key, another route) may have failed: only the answer the client gets counts.
    this.answer = new Side();
    this.failure = null;
    this.status = status;
    this.headers = { ...headers };
    this.streamed = streamed;
  }

  bytes(chunk: Chunk | Uint8Array | string, text = false): void {
    if (typeof chunk === 'string') this.answer.add(text ? Buffer.from(chunk, 'utf8') : chunkBytes(chunk));
    else this.answer.add(chunk instanceof Uint8Array ? chunk : new Uint8Array(chunk));
  }

  failed(error: ServiceError): void {
    this.failure = error;
  }

  entry(event: UsageEvent): RequestLogEntry {
    const { ctx, failure } = this;
    const headSeen = this.status !== 0;
    // Before any head the client got our envelope, or nothing at all when it left.
    const status = headSeen ? this.status : event.outcome === 'aborted' ? STATUS_CLIENT_LEFT : (failure?.status ?? 502);
    const started = event.startedAt ?? event.at;
    const answerBody: RequestLogBody =
      !headSeen && failure !== null
        ? { text: redactSecrets(JSON.stringify(errorEnvelope(failure, ctx.requestId))), bytes: 0, truncated: false }
        : this.answer.body();
    if (!headSeen && failure !== null) answerBody.bytes = Buffer.byteLength(answerBody.text!);
    const outcome: RequestLogOutcome = event.outcome;
    return {
      id: ctx.requestId,
      receivedAt: new Date(decodeTime(ctx.requestId, 4)).toISOString(),
      startedAt: new Date(started).toISOString(),
      endedAt: new Date(event.at).toISOString(),
      op: event.op,
      method: ctx.req.method,
      path: redactSecrets(ctx.req.path.slice(0, PATH_MAX)),
      clientModel: this.clientModel === null ? null : redactSecrets(this.clientModel.slice(0, NAME_MAX)),
      modelId: event.modelId,
      providerId: event.providerId,
      credentialId: event.credentialId ?? null,
      tokenId: event.tokenId,
      session: event.session ?? null,
      outcome,
      status,
      errorCode: outcome === 'failed' ? (failure?.code ?? 'UPSTREAM_ERROR') : null,
      stream: this.streamed,
      firstByteMs: event.firstByteAt === undefined ? null : event.firstByteAt - started,
      durationMs: event.at - started,
      usage: event.usage,
      costUsd: event.usage?.costUsd ?? null,
      ...(event.route && { route: event.route }),
      query: redactSecrets(ctx.req.query.slice(0, PATH_MAX)),
      request: {
        headers: this.requestHeaders,
        body: this.upload ? { text: null, bytes: 0, truncated: false, omitted: 'upload' } : this.request.body(),
      },
      response: { headers: keptHeaders(this.headers), body: answerBody },
      error: failure === null ? null : { code: failure.code, message: redactSecrets(failure.message) },
    };
  }
}

/** The captures of a thread's calls in flight, by their route context; none while the log is off. */
export function requestCaptures(sink: RequestLogSink | undefined) {
  const captures = new WeakMap<RouteContext<unknown>, RequestCapture>();
  return {
    /**
     * The call's capture, begun at the first ask while the log is on for its token: a JSON route asks before its
     * body goes to a worker. `clientModel` is the model as the client named it, where the route has read it.
     */
    of(ctx: RouteContext<unknown>, clientModel?: string | null): RequestCapture | undefined {
      if (sink === undefined) return undefined;
      let capture = captures.get(ctx);
      if (capture === undefined) {
        if (ctx.principal === null || !sink.on(ctx.principal.tokenId)) return undefined;
        capture = new RequestCapture(ctx);
        captures.set(ctx, capture);
      }
      if (clientModel !== undefined) capture.clientModel = clientModel;
      return capture;
    },
    /** The call is over: its entry goes to the store. */
    end(ctx: RouteContext<unknown>, event: UsageEvent): void {
      const capture = captures.get(ctx);
      if (capture === undefined) return;
      captures.delete(ctx);
      sink!.write(capture.entry(event));
    },
  };
}
