import { ClientClosed, errorFromWire, ServiceError } from '../../protocol/errors.ts';
import type { FromControl, RouteShape, ToControl } from '../../protocol/forward.ts';
import { route, type RouteContext, type RouteDef, type RouteResult } from './router.ts';
import type { ResponseWriter } from './types.ts';

// An edge thread's side of forwarded requests (protocol/forward.ts): a route of the control thread's table
// becomes a route here that hands its request over and answers with what comes back. The edge thread's app
// (app.ts) still does everything around it: Host check, CORS, token and scope from its copies, the body read,
// errors, the log line and the metrics.

type Post = (message: ToControl, transfer?: ArrayBuffer[]) => void;

interface Waiting {
  resolve(result: RouteResult): void;
  reject(err: unknown): void;
  /** A streamed answer's messages that came before the app handed the route its writer. */
  queued: FromControl[] | null;
  out: ResponseWriter | null;
  /** Bytes written while the socket was full, credited once it drains. */
  owed: number;
}

export interface ForwardClient {
  /** Hands `ctx`'s request to the control thread as the route `name`, and answers with its result. */
  forward(name: string, ctx: RouteContext<unknown>): Promise<RouteResult>;
  take(message: FromControl): void;
  /** The control thread is gone: every call waiting fails, every stream ends. */
  close(): void;
}

const byteLength = (chunk: string | Uint8Array) =>
  typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk.byteLength;

/** A call waiting for its route's first answer, and that answer. */
function waiting(): [Waiting, Promise<RouteResult>] {
  const call: Waiting = { resolve: () => undefined, reject: () => undefined, queued: null, out: null, owed: 0 };
  const result = new Promise<RouteResult>((resolve, reject) => {
    call.resolve = resolve;
    call.reject = reject;
  });
  return [call, result];
}

/** A route's answer in one message, as the app writes it. */
const wholeResult = (m: Extract<FromControl, { t: 'result' }>): RouteResult => ({
  ...(m.status !== undefined && { status: m.status }),
  ...(m.headers !== undefined && { headers: m.headers }),
  ...(m.raw === undefined ? { body: m.body } : { raw: m.raw }),
});

export function forwardClient(post: Post): ForwardClient {
  const calls = new Map<number, Waiting>();
  let nextId = 1;

  function write(id: number, call: Waiting, m: FromControl): void {
    const out = call.out!;
    switch (m.t) {
      case 'head':
        out.head(m.status, m.headers);
        return;
      case 'data': {
        const bytes = byteLength(m.chunk);
        if (out.write(m.chunk) && call.owed === 0) post({ t: 'credit', id, bytes });
        else call.owed += bytes;
        return;
      }
      case 'end':
        calls.delete(id);
        out.end(m.chunk, m.failed);
        return;
      case 'abort':
        calls.delete(id);
        out.abort();
        return;
      case 'error':
        // A stream whose route threw after it began: the connection is the only honest end.
        calls.delete(id);
        out.abort();
        return;
    }
  }

  function streamed(id: number, call: Waiting): RouteResult {
    return {
      stream(out) {
        call.out = out;
        // The app's writer ends the stream itself (a HEAD answered after its head, a client gone): the route
        // on the control thread lets go of what it holds.
        out.onAbort(() => {
          if (calls.delete(id)) post({ t: 'gone', id });
        });
        out.onWritable(() => {
          if (call.owed === 0 || !calls.has(id)) return;
          post({ t: 'credit', id, bytes: call.owed });
          call.owed = 0;
        });
        for (const m of call.queued!.splice(0)) write(id, call, m);
        call.queued = null;
      },
    };
  }

  return {
    forward(name, ctx) {
      const id = nextId++;
      const { req } = ctx;
      // A copy the control thread owns: the read body may sit in a buffer this thread reuses.
      const body = req.body === null ? null : new Uint8Array(req.body);
      const { method, path, query, headers, peer } = req;
      const [call, result] = waiting();
      calls.set(id, call);
      ctx.onAbort(() => {
        if (!calls.delete(id)) return;
        post({ t: 'gone', id });
        // The route's answer will not come: the request settles now, as client_aborted (499).
        if (call.queued === null && call.out === null) call.reject(new ClientClosed());
        else if (call.out === null) call.queued!.push({ t: 'abort', id });
      });
      post(
        {
          t: 'call',
          id,
          route: name,
          req: { method, path, query, headers, body, ...(peer !== undefined && { peer }) },
          requestId: ctx.requestId,
          principal: ctx.principal,
          params: { ...ctx.params },
        },
        body === null ? undefined : [body.buffer as ArrayBuffer],
      );
      return result;
    },
    take(m) {
      const call = calls.get(m.id);
      if (call === undefined) return;
      if (call.queued === null && call.out === null) {
        // The route's first answer.
        if (m.t === 'result') {
          calls.delete(m.id);
          call.resolve(wholeResult(m));
        } else if (m.t === 'stream') {
          call.queued = [];
          call.resolve(streamed(m.id, call));
        } else if (m.t === 'error') {
          calls.delete(m.id);
          call.reject(errorFromWire(m));
        }
        return;
      }
      if (call.out === null) call.queued!.push(m);
      else write(m.id, call, m);
    },
    close() {
      const unavailable = () =>
        new ServiceError('OVERLOADED', 'The service is shutting down: this answer was cut short.', {
          headers: { 'retry-after': '1' },
        });
      for (const [id, call] of [...calls]) {
        calls.delete(id);
        if (call.out !== null) call.out.abort();
        else if (call.queued !== null) call.queued.push({ t: 'abort', id });
        else call.reject(unavailable());
      }
    },
  };
}

/** The control thread's routes as this thread routes them: each forwards its request whole. */
export function forwardedRoutes(shapes: readonly RouteShape[], client: ForwardClient): RouteDef[] {
  return shapes.map((shape) => {
    const name = `${shape.method} ${shape.path}`;
    return route({
      method: shape.method,
      path: shape.path,
      scope: shape.scope,
      ...(shape.body && { rawBody: () => 'buffer' as const }),
      handle: (ctx) => client.forward(name, ctx),
    });
  });
}
