import { errorToWire, ServiceError } from '../../protocol/errors.ts';
import { FORWARD_STREAM_WINDOW, type FromControl, type RouteShape, type ToControl } from '../../protocol/forward.ts';
import { checkBody } from '../../protocol/validate.ts';
import { parseJsonBody } from './json-body.ts';
import type { RouteDef } from './router.ts';
import type { EdgeRequest, ResponseWriter } from './types.ts';

// The control thread's side of forwarded requests (protocol/forward.ts): it runs the route an edge thread
// matched, as app.ts would after its checks (the route's own head check, its body check, its handler), and
// posts back what the route returned. A streamed answer goes out as head, data and end messages, with the
// edge thread's credits as its backpressure.

type Post = (message: FromControl, transfer?: ArrayBuffer[]) => void;

interface Live {
  aborts: (() => void)[];
  /** Stream bytes posted and not yet credited by the edge thread. */
  backlog: number;
  writable: (() => void) | null;
}

/** What an edge thread routes a forwarded route by: its method, path, scope and whether it reads a body. */
export function routeShapes(routes: readonly RouteDef[]): RouteShape[] {
  return routes.map((r) => ({ method: r.method, path: r.path, scope: r.scope, body: !!(r.body || r.rawBody) }));
}

export interface ForwardServer {
  take(message: ToControl): void;
  /** The edge thread is gone: every call it had running hears that its client left. */
  close(): void;
}

export function serveForwarded(routes: readonly RouteDef[], post: Post): ForwardServer {
  const byName = new Map(routes.map((r) => [`${r.method} ${r.path}`, r]));
  const live = new Map<number, Live>();

  function fail(id: number, err: unknown): void {
    live.delete(id);
    post({ t: 'error', id, ...errorToWire(err) });
  }

  function gone(id: number): void {
    const call = live.get(id);
    if (call === undefined) return;
    live.delete(id);
    for (const abort of call.aborts.splice(0)) abort();
  }

  /** The route's writer: each call a message; `write` answers false while the edge thread's backlog is full. */
  function writer(id: number, call: Live): ResponseWriter {
    const over = () => live.delete(id);
    return {
      head: (status, headers) => live.has(id) && post({ t: 'head', id, status, headers }),
      write(chunk) {
        if (!live.has(id)) return false;
        post({ t: 'data', id, chunk });
        call.backlog += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.byteLength;
        return call.backlog < FORWARD_STREAM_WINDOW;
      },
      end(chunk, failed) {
        if (!live.has(id)) return;
        over();
        post({ t: 'end', id, ...(chunk !== undefined && { chunk }), ...(failed === true && { failed }) });
      },
      abort() {
        if (!live.has(id)) return;
        over();
        post({ t: 'abort', id });
      },
      onWritable: (callback) => void (call.writable = callback),
      // A client that left before the route's stream began: the route lets go of what it holds at once.
      onAbort: (callback) => (live.has(id) ? void call.aborts.push(callback) : callback()),
    };
  }

  async function run(m: Extract<ToControl, { t: 'call' }>): Promise<void> {
    const def = byName.get(m.route);
    if (def === undefined) throw new ServiceError('NOT_FOUND', `No route for ${m.route.slice(0, 200)}.`);
    const call: Live = { aborts: [], backlog: 0, writable: null };
    live.set(m.id, call);
    const bytes = m.req.body === null ? null : Buffer.from(m.req.body.buffer, m.req.body.byteOffset, m.req.body.length);
    // The route's own check of the head (pairing's loopback peer) runs here, where its refusal is answered. A
    // route that reads its body as a stream (an upload) gets the bytes the edge thread read, as one chunk.
    const streamed = def.rawBody?.({ ...m.req }) === 'stream';
    const body = streamed ? null : bytes;
    const req: EdgeRequest = { ...m.req, body };
    const parsed = def.body ? checkBody(def.body, parseJsonBody(body, req.headers['content-type'])) : null;
    const result = await def.handle({
      req,
      requestId: m.requestId,
      principal: m.principal,
      params: m.params,
      body: parsed,
      bodyStream: streamed ? oneChunk(bytes) : null,
      onAbort: (callback) => void call.aborts.push(callback),
    });
    if (!live.has(m.id)) {
      // The client left while the route ran: a stream it opened is told so at once.
      if (result.stream) result.stream(writer(m.id, call));
      return;
    }
    if (result.stream) {
      post({ t: 'stream', id: m.id });
      result.stream(writer(m.id, call));
      return;
    }
    live.delete(m.id);
    const { status, headers, body: value, raw } = result;
    post({ t: 'result', id: m.id, status, headers, ...(raw === undefined ? { body: value } : { raw }) });
  }

  return {
    take(m) {
      if (m.t === 'call') {
        run(m).catch((err: unknown) => fail(m.id, err));
        return;
      }
      if (m.t === 'gone') {
        gone(m.id);
        return;
      }
      const call = live.get(m.id);
      if (call === undefined) return;
      call.backlog -= m.bytes;
      if (call.backlog < FORWARD_STREAM_WINDOW / 2 && call.writable !== null) call.writable();
    },
    close() {
      for (const id of [...live.keys()]) gone(id);
    },
  };
}

async function* oneChunk(bytes: Buffer | null): AsyncIterable<Uint8Array> {
  if (bytes !== null && bytes.length > 0) yield bytes;
}
