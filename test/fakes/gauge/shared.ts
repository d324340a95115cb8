import { startFake, type FakeServer, type Handler, type RecordedRequest, type Reply } from '../http.ts';

// What every Gauge provider fake adds to the loopback server: scripted failures that run after the fake has
// checked the credential (so a refusal of a good key is told apart from a wrong key), a hang that never
// answers until close, a hold/release gate for slow-upstream scenarios, and a count of requests in flight
// (the gauge core's pool test reads `maxConcurrent`).

/** A scripted answer, for the next request or for the next request to one path. */
export type Script = ({ kind: 'reply'; reply: Reply } | { kind: 'malformed' } | { kind: 'hang' }) & { path?: string };

export interface GaugeFakeControls {
  /** `http://127.0.0.1:<port>` plus the provider's API prefix: what a source's `config.baseUrl` takes. */
  baseUrl: string;
  origin: string;
  requests: RecordedRequest[];
  /** Requests being answered right now (held, hung or in a handler). */
  readonly concurrent: number;
  /** The highest `concurrent` seen since start or `resetCounters()`. */
  readonly maxConcurrent: number;
  resetCounters(): void;
  /** The next authenticated request gets this answer instead of the route's. */
  failNext(status: number, body: unknown, headers?: Record<string, string>): void;
  /** The next authenticated request to `path` (as the fake sees it, prefix included) gets this answer. */
  failNextAt(path: string, status: number, body: unknown, headers?: Record<string, string>): void;
  /** The next authenticated request gets a 200 whose body is not JSON. */
  malformedNext(): void;
  /** The next authenticated request is never answered (until close); it counts as in flight until then. */
  hangNext(): void;
  /** Every request waits from now on until `release()`. */
  hold(): void;
  release(): void;
  /** Resolves once `concurrent` reaches `n` (no polling: each arrival checks). */
  whenConcurrent(n: number): Promise<void>;
  close(): Promise<void>;
}

export interface GaugeFakeOptions {
  prefix: string;
  routes: Record<string, Handler>;
  authenticate: (req: RecordedRequest) => Reply | null;
  notFound: (req: RecordedRequest) => Reply;
}

export async function startGaugeFake(options: GaugeFakeOptions): Promise<GaugeFakeControls> {
  const scripts: Script[] = [];
  let concurrent = 0;
  let maxConcurrent = 0;
  let held: Array<() => void> | null = null;
  const waiters: Array<{ n: number; resolve: () => void }> = [];

  function arrived(): void {
    concurrent++;
    maxConcurrent = Math.max(maxConcurrent, concurrent);
    for (const waiter of [...waiters]) {
      if (concurrent >= waiter.n) {
        waiters.splice(waiters.indexOf(waiter), 1);
        waiter.resolve();
      }
    }
  }

  const wrap =
    (handler: Handler): Handler =>
    async (req, params) => {
      arrived();
      try {
        if (held !== null) await new Promise<void>((resolve) => held?.push(resolve));
        const index = scripts.findIndex((s) => s.path === undefined || s.path === req.path);
        const script = index === -1 ? undefined : scripts.splice(index, 1)[0];
        if (script?.kind === 'hang') await new Promise<never>(() => {});
        if (script?.kind === 'reply') return script.reply;
        if (script?.kind === 'malformed')
          return { status: 200, body: '{"object": "page", "data": [', headers: { 'content-type': 'application/json' } };
        return await handler(req, params);
      } finally {
        concurrent--;
      }
    };

  const routes = Object.fromEntries(Object.entries(options.routes).map(([key, handler]) => [key, wrap(handler)]));
  const server: FakeServer = await startFake({
    routes,
    authenticate: options.authenticate,
    notFound: options.notFound,
  });
  return {
    baseUrl: server.origin + options.prefix,
    origin: server.origin,
    requests: server.requests,
    get concurrent() {
      return concurrent;
    },
    get maxConcurrent() {
      return maxConcurrent;
    },
    resetCounters() {
      maxConcurrent = concurrent;
    },
    failNext(status, body, headers) {
      scripts.push({ kind: 'reply', reply: headers === undefined ? { status, body } : { status, body, headers } });
    },
    failNextAt(path, status, body, headers) {
      scripts.push({
        kind: 'reply',
        path,
        reply: headers === undefined ? { status, body } : { status, body, headers },
      });
    },
    malformedNext() {
      scripts.push({ kind: 'malformed' });
    },
    hangNext() {
      scripts.push({ kind: 'hang' });
    },
    hold() {
      held ??= [];
    },
    release() {
      const waiting = held ?? [];
      held = null;
      for (const resolve of waiting) resolve();
    },
    whenConcurrent(n) {
      if (concurrent >= n) return Promise.resolve();
      return new Promise<void>((resolve) => waiters.push({ n, resolve }));
    },
    close: server.close,
  };
}

/** Query value or null. */
export function queryOf(req: RecordedRequest, name: string): string | null {
  return req.query[name] ?? null;
}

/** An opaque, base64 cursor like the providers' own (`page_…`, `AAAA…=`), carrying a page index. */
export function encodeCursor(prefix: string, index: number): string {
  return prefix + Buffer.from(`page:${index}`).toString('base64');
}

export function decodeCursor(prefix: string, value: string | null): number | null {
  if (value === null || !value.startsWith(prefix)) return null;
  const match = /^page:(\d+)$/.exec(Buffer.from(value.slice(prefix.length), 'base64').toString('utf8'));
  return match ? Number(match[1]) : null;
}
