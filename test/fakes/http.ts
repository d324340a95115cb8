import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

// The loopback server under every fake provider: a route table keyed "METHOD /path", a log of every request,
// and one-shot overrides (an error answer, or no answer at all) for the failure tests.

export interface RecordedRequest {
  method: string;
  path: string;
  query: Record<string, string>;
  /** Lower-cased, as node parses them. */
  headers: IncomingHttpHeaders;
  /** Names and values exactly as sent, every occurrence: what a "sent only there" check must scan. */
  rawHeaders: string[];
  /** Path and query as sent. */
  url: string;
  body: string;
}

export interface Reply {
  status: number;
  /** Sent as-is when a string, as JSON otherwise. */
  body: unknown;
  headers?: Record<string, string>;
}

export type Handler = (req: RecordedRequest) => Reply;

export interface FakeOptions {
  routes: Record<string, Handler>;
  /** Runs before the route; a reply refuses the request the way the provider does. */
  authenticate?: (req: RecordedRequest) => Reply | null;
  /** The provider's own 404. */
  notFound: (req: RecordedRequest) => Reply;
}

export interface FakeServer {
  /** `http://127.0.0.1:<port>`, without a trailing slash. */
  origin: string;
  requests: RecordedRequest[];
  /** The next request, whatever it is, gets this answer instead of the route's. */
  failNext(status: number, body: unknown, headers?: Record<string, string>): void;
  /** The next request is read and never answered (until close). */
  hangNext(): void;
  close(): Promise<void>;
}

type Override = { kind: 'reply'; reply: Reply } | { kind: 'hang' };

function send(res: ServerResponse, reply: Reply): void {
  const text = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body);
  res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
  res.end(text);
}

async function record(req: IncomingMessage): Promise<RecordedRequest> {
  const chunks: Buffer[] = [];
  for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
  const url = new URL(req.url ?? '/', 'http://fake.invalid');
  return {
    method: req.method ?? 'GET',
    path: url.pathname,
    query: Object.fromEntries(url.searchParams),
    headers: req.headers,
    rawHeaders: [...req.rawHeaders],
    url: req.url ?? '/',
    body: Buffer.concat(chunks).toString('utf8'),
  };
}

export async function startFake(options: FakeOptions): Promise<FakeServer> {
  const requests: RecordedRequest[] = [];
  const overrides: Override[] = [];

  const server = createServer((req, res) => {
    void record(req).then((recorded) => {
      requests.push(recorded);
      const override = overrides.shift();
      if (override?.kind === 'hang') return;
      if (override?.kind === 'reply') return send(res, override.reply);
      const refused = options.authenticate?.(recorded);
      if (refused) return send(res, refused);
      const handler = options.routes[`${recorded.method} ${recorded.path}`];
      send(res, handler ? handler(recorded) : options.notFound(recorded));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    origin: `http://127.0.0.1:${port}`,
    requests,
    failNext(status, body, headers) {
      overrides.push({ kind: 'reply', reply: headers === undefined ? { status, body } : { status, body, headers } });
    },
    hangNext() {
      overrides.push({ kind: 'hang' });
    },
    async close() {
      // Hung requests hold their sockets open; close() alone would wait for them forever.
      server.closeAllConnections();
      await new Promise<void>((resolve, reject) => server.close((err) => (err ? reject(err) : resolve())));
    },
  };
}

/** A Bearer token from the Authorization header, or null. */
export function bearerOf(req: RecordedRequest): string | null {
  const value = req.headers.authorization;
  const match = typeof value === 'string' ? /^Bearer (.+)$/.exec(value) : null;
  return match?.[1] ?? null;
}
