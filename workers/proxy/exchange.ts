import { isUtf8 } from 'node:buffer';
import type { Dispatcher } from 'undici';
import { ServiceError } from '../../protocol/errors.ts';
import { GATEWAY_OPS, type UsageReport } from '../../protocol/gateway.ts';
import { ownBuffer, STRING_CHUNK_MAX, type RelayEnd, type RelayRequest } from '../../protocol/relay.ts';
import { filterResponseHeaders } from './header-policy.ts';
import type { GatewayAdapter } from './providers/types.ts';
import { scrubHeaders, scrubWhole, streamScrubber, type StreamScrubber } from './scrub.ts';
import { fromTransportError, fromUpstreamStatus, type UpstreamContext } from '../shared/upstream-errors.ts';
import { createUsageCollector, type UsageResult } from './usage/collectors.ts';
import { createStreamTap, type StreamTap } from './usage/stream-tap.ts';
import { bodyBytesOf, withEstimate } from './usage/estimate.ts';
import { translatedErrorText, translatedHeaders, translatedWhole, type Translated } from './translate-glue.ts';
import { createTranslatingTap } from './translate-tap.ts';
import type { RelayControl } from './relay-control.ts';
import type { Post } from './upstream-request.ts';

// One upstream call's answer, read as undici parses it and posted to the edge as relay messages (relay.ts
// starts the call): a whole answer in one message, a stream as its chunks, an error as the relay's envelope.

const MAX_WHOLE_BYTES = 256 * 1024 * 1024;
const MAX_ERROR_BYTES = 64 * 1024;
const TEXT_WHOLE_MAX = 64 * 1024;

/** The collector's result as the relay reports it: the usage alone, and the response ID beside it. */
function relayEnd({ responseId, ...usage }: UsageResult): RelayEnd {
  return { usage, responseId };
}

const latin1 = (bytes: Uint8Array): string =>
  Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('latin1');

export interface ExchangeSetup {
  id: number;
  req: RelayRequest;
  control: RelayControl;
  post: Post;
  context: UpstreamContext;
  /** The credential's bytes, masked out of every answer relayed (scrub.ts); null when there is none. */
  secret: Buffer | null;
  injected: boolean;
  gateway: GatewayAdapter;
  /** Called once: with nothing when the answer has been posted, or with the error the relay reports. */
  settled: (err?: unknown) => void;
  /** A translated call: the answer is rewritten into the client's protocol (translate/index.ts). */
  translated: Translated | null;
}

/**
 * undici's handler for one upstream call: it reads the answer as undici parses it and posts it to the edge.
 * It ends through `setup.settled`, once. A callback and not a promise: under load, a promise per call
 * awaited by the relay made each relay worker promote ~0.4 KB more per call (bench/PROFILE.md).
 */
export class Exchange implements Dispatcher.DispatchHandler {
  headSent = false;
  /** A stream's usage as read when it failed or was stopped. */
  private tapUsage: UsageResult | null = null;
  private settled = false;
  private mode: 'head' | 'error' | 'stream' | 'whole' = 'head';
  private status = 0;
  private headers: Record<string, string | string[] | undefined> = {};
  private outHeaders: Record<string, string> = {};
  private chunks: Buffer[] = [];
  private size = 0;
  private tap: StreamTap | null = null;
  private scrubber: StreamScrubber | null = null;
  private named: boolean;

  /** The request body's size, for an estimate of its input when no usage arrives. */
  private readonly bodyBytes: number;

  constructor(private readonly setup: ExchangeSetup) {
    this.bodyBytes = bodyBytesOf(setup.req.body);
    this.named =
      setup.translated !== null || (setup.req.op !== 'responses.create' && setup.req.op !== 'responses.compact');
  }

  /** Ends the exchange with an error (the first outcome wins) and stops the upstream call if it still runs. */
  fail(err: unknown, controller?: Dispatcher.DispatchController): void {
    if (this.settled) return;
    this.finish(err);
    controller?.abort(err instanceof Error ? err : new Error(String(err)));
  }

  private finish(err?: unknown): void {
    this.settled = true;
    this.setup.control.detach();
    this.setup.settled(err);
  }

  /**
   * The usage of a call that ends early: failed, or stopped by the edge. Once the upstream has accepted it (a
   * successful head), the counts that did not arrive (a styleA chat stream states usage only at its end) are
   * estimated from what was sent and streamed (estimate.ts). Before that, or after an error answer, the upstream
   * is not known to have used anything: null.
   */
  usageSoFar(): UsageReport | null {
    if (!GATEWAY_OPS[this.setup.req.op].metered) return null;
    if (this.mode === 'whole') return withEstimate(null, this.bodyBytes, 0);
    if (this.tap === null) return null;
    this.tapUsage ??= this.tap.end().usage;
    return withEstimate(relayEnd(this.tapUsage).usage, this.bodyBytes, this.tap.contentBytes());
  }

  onRequestStart(controller: Dispatcher.DispatchController): void {
    this.setup.control.attach(controller);
  }

  onResponseStart(
    _controller: Dispatcher.DispatchController,
    statusCode: number,
    headers: Record<string, string | string[] | undefined>,
  ): void {
    // An informational head (103 Early Hints) comes before the answer's own.
    if (statusCode >= 100 && statusCode < 200) return;
    const { id, req, post, injected } = this.setup;
    this.status = statusCode;
    this.headers = headers;
    // A status outside 100..599 (`HTTP/1.1 099 Low`) is no answer a client can act on: an upstream error.
    if (statusCode >= 400 || statusCode < 100) {
      this.mode = 'error';
      return;
    }
    this.outHeaders = scrubHeaders(filterResponseHeaders(headers), this.setup.context.credential);
    if (this.setup.translated !== null) Object.assign(this.outHeaders, translatedHeaders(this.setup.translated));
    const contentType = String(headers['content-type'] ?? '');
    if (contentType.includes('text/event-stream') || !contentType.includes('json')) {
      // A stream (SSE) or binary media (speech): relayed as it arrives.
      post({ t: 'head', id, status: statusCode, headers: this.outHeaders });
      this.headSent = true;
      const translated = this.setup.translated;
      this.tap =
        translated === null
          ? createStreamTap(req.op, { stripInjectedUsage: injected, providerKind: req.target.kind })
          : createTranslatingTap(
              translated.upstreamOp,
              translated.translator.stream(translated.ctx, translated.state),
              req.target.kind,
            );
      this.scrubber = streamScrubber(this.setup.secret);
      this.mode = 'stream';
    } else this.mode = 'whole';
  }

  onResponseData(controller: Dispatcher.DispatchController, chunk: Buffer): void {
    if (this.settled) return;
    if (this.mode === 'stream') {
      this.relayChunk(chunk);
      return;
    }
    this.size += chunk.byteLength;
    if (this.mode === 'error' && this.size > MAX_ERROR_BYTES) {
      // The provider's account of an error is quoted, never needed whole.
      this.fail(this.statusError(''), controller);
    } else if (this.size > MAX_WHOLE_BYTES) {
      this.fail(
        new ServiceError('UPSTREAM_ERROR', 'The provider answered with a body over the size limit.', {
          details: { limitBytes: MAX_WHOLE_BYTES },
        }),
        controller,
      );
    } else {
      // undici hands each chunk over for good (a view of the socket's read, not reused), as request() did.
      this.chunks.push(chunk);
    }
  }

  onResponseEnd(): void {
    if (this.settled) return;
    try {
      if (this.mode === 'error') throw this.statusError(this.body().toString('utf8'));
      if (this.mode === 'stream') this.endStream();
      else if (this.mode === 'whole') this.endWhole();
      else throw new Error('The upstream call ended without an answer.');
      this.finish();
    } catch (err) {
      this.fail(err);
    }
  }

  onResponseError(_controller: Dispatcher.DispatchController, err: Error): void {
    if (this.settled) return;
    const { control, context } = this.setup;
    if (control.aborted) this.fail(err);
    // A failure while reading the provider's error body still reports that error, unquoted.
    else if (this.mode === 'error') this.fail(this.statusError(''));
    // After the head, a connection that ends cut the answer short: UPSTREAM_ERROR, not UNREACHABLE.
    else this.fail(fromTransportError(err, context, this.mode !== 'head') ?? err);
  }

  private relayChunk(chunk: Uint8Array): void {
    // Scrubbed before the tap, so that neither the client nor the usage and response ID it reads see the key.
    const clean = this.scrubber === null ? chunk : this.scrubber.push(chunk);
    if (clean.byteLength > 0) this.relayClean(clean);
  }

  private relayClean(clean: Uint8Array): void {
    const tap = this.tap!;
    const out = tap.push(clean);
    if (!this.named) {
      const responseId = tap.responseId();
      if (responseId !== null) {
        this.named = true;
        this.setup.post({ t: 'created', id: this.setup.id, responseId });
      }
    }
    if (out !== null && out.byteLength > 0) {
      this.setup.control.posted(out.byteLength);
      const closing = tap.closed();
      if (out.byteLength <= STRING_CHUNK_MAX)
        this.setup.post({ t: 'data', id: this.setup.id, chunks: [latin1(out)], closing });
      else {
        const chunk = ownBuffer(out);
        this.setup.post({ t: 'data', id: this.setup.id, chunks: [chunk], closing }, [chunk]);
      }
    }
  }

  private endStream(): void {
    const held = this.scrubber?.end() ?? null;
    if (held !== null) this.relayClean(held);
    const { tail, usage } = this.tap!.end();
    const end = relayEnd(usage);
    // An upstream that reports no usage in its stream (some local servers) is metered at the estimate.
    if (GATEWAY_OPS[this.setup.req.op].metered)
      end.usage = withEstimate(end.usage, this.bodyBytes, this.tap!.contentBytes());
    if (tail !== null && tail.byteLength > STRING_CHUNK_MAX) {
      const last = ownBuffer(tail);
      this.setup.post({ t: 'end', id: this.setup.id, end, chunks: [last] }, [last]);
    } else
      this.setup.post({
        t: 'end',
        id: this.setup.id,
        end,
        chunks: tail === null || tail.byteLength === 0 ? [] : [latin1(tail)],
      });
  }

  private endWhole(): void {
    const { id, req, post, gateway, translated } = this.setup;
    const whole = scrubWhole(this.body(), this.setup.secret);
    if (translated !== null) return this.endTranslated(whole, translated);
    let body: ArrayBuffer | string = whole.buffer as ArrayBuffer;
    const collector = createUsageCollector(req.op, { providerKind: req.target.kind });
    if (GATEWAY_OPS[req.op].metered || req.op === 'rerank') {
      let parsed: unknown;
      // A small answer goes to the edge as the very text parsed here (a short string clones for less than a
      // buffer transfers); only when it is valid UTF-8, so that the text holds exactly the upstream's bytes.
      const text = whole.toString('utf8');
      if (whole.byteLength <= TEXT_WHOLE_MAX && isUtf8(whole)) body = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        throw new ServiceError('UPSTREAM_ERROR', 'The provider answered with malformed JSON.', {
          details: { providerId: req.target.id },
        });
      }
      collector.json(parsed);
      if (gateway.normalize && req.op === 'rerank')
        body = JSON.stringify(gateway.normalize(req.op, parsed, req.clientModel ?? ''));
    }
    post(
      { t: 'whole', id, status: this.status, headers: this.outHeaders, body, end: relayEnd(collector.result()) },
      typeof body === 'string' ? [] : [body],
    );
  }

  /** A translated whole answer: metered as the upstream's, answered in the client's protocol. */
  private endTranslated(whole: Buffer, translated: Translated): void {
    const { id, req, post } = this.setup;
    const { body, usage } = translatedWhole(whole, translated, req);
    post({
      t: 'whole',
      id,
      status: this.status,
      headers: { ...this.outHeaders, 'content-type': 'application/json' },
      body,
      end: relayEnd(usage),
    });
  }

  /** The chunks read so far in one buffer of its own (not Node's pool), so that it can be transferred. */
  private body(): Buffer {
    const out = Buffer.from(new ArrayBuffer(this.size));
    let at = 0;
    for (const chunk of this.chunks) {
      out.set(chunk, at);
      at += chunk.byteLength;
    }
    this.chunks = [];
    return out;
  }

  private statusError(text: string): ServiceError {
    const error = fromUpstreamStatus(this.status, this.headers, this.clientErrorText(text), this.setup.context);
    // An upstream 4xx is the client's to fix: it keeps its status (docs/api.md).
    const keep = error.code === 'UPSTREAM_ERROR' && this.status >= 400 && this.status < 500;
    return keep ? new ServiceError(error.code, error.message, { details: error.details, status: this.status }) : error;
  }

  /** A translated call quotes the provider's error in the client's protocol vocabulary. */
  private clientErrorText(text: string): string {
    const translated = this.setup.translated;
    return translated === null ? text : translatedErrorText(translated, this.status, text);
  }
}
