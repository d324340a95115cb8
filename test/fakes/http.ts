import { createServer, type IncomingHttpHeaders, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { ScriptControls } from './script.ts';
import { boundaryOf, summarizeMultipart, type PartSummary } from './multipart.ts';
import { createStreamHub, type InStreamError, type StreamControls, type StreamReply } from './stream.ts';

// The loopback server under every fake provider: a route table keyed "METHOD /path" (`:name` segments
// capture), a log of every request, one-shot overrides (an error answer, no answer at all, a broken or slow
// stream) for the failure tests, and a record of every streamed answer.

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
  /** The body as UTF-8; empty for multipart bodies, which are summarized in `parts` instead. */
  body: string;
  /** The parsed body when it was sent as JSON and parses; undefined otherwise. */
  json: unknown;
  /** One summary per part of a multipart/form-data body; null for any other body. */
  parts: PartSummary[] | null;
}

export interface Reply {
  status: number;
  /** Sent as-is when a string, as JSON otherwise. */
  body: unknown;
  headers?: Record<string, string>;
}

export interface BinaryReply {
  status: number;
  bytes: Buffer;
  headers: Record<string, string>;
}

export type AnyReply = Reply | BinaryReply | StreamReply;

export type Handler = (req: RecordedRequest, params: Record<string, string>) => AnyReply | Promise<AnyReply>;

export interface FakeOptions {
  routes: Record<string, Handler>;
  /** Runs before the route; a reply refuses the request the way the provider does. */
  authenticate?: (req: RecordedRequest) => Reply | null;
  /** The provider's own 404. */
  notFound: (req: RecordedRequest) => Reply;
  /** The provider's own 400, for a body the fake cannot read (a malformed multipart stream). */
  invalid?: (message: string) => Reply;
  /** What `streamErrorNext` sends when the test names no error. */
  streamError?: InStreamError;
}

export interface FakeServer extends StreamControls {
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

function send(res: ServerResponse, reply: Reply | BinaryReply): void {
  if ('bytes' in reply) {
    res.writeHead(reply.status, { 'content-length': String(reply.bytes.length), ...reply.headers });
    res.end(reply.bytes);
    return;
  }
  const text = typeof reply.body === 'string' ? reply.body : JSON.stringify(reply.body);
  res.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers });
  res.end(text);
}

function parseJson(text: string, contentType: string | undefined): unknown {
  if (text === '' || !/\bjson\b/i.test(contentType ?? '')) return undefined;
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}

async function record(req: IncomingMessage): Promise<RecordedRequest> {
  const url = new URL(req.url ?? '/', 'http://fake.invalid');
  const contentType = req.headers['content-type'];
  const boundary = boundaryOf(contentType);
  let body = '';
  let parts: PartSummary[] | null = null;
  if (boundary !== null) {
    parts = await summarizeMultipart(req as AsyncIterable<Buffer>, boundary);
  } else {
    const chunks: Buffer[] = [];
    for await (const chunk of req as AsyncIterable<Buffer>) chunks.push(chunk);
    body = Buffer.concat(chunks).toString('utf8');
  }
  return {
    method: req.method ?? 'GET',
    path: url.pathname,
    query: Object.fromEntries(url.searchParams),
    headers: req.headers,
    rawHeaders: [...req.rawHeaders],
    url: req.url ?? '/',
    body,
    json: parseJson(body, contentType),
    parts,
  };
}

interface Pattern {
  method: string;
  segments: string[];
  handler: Handler;
}

/** Exact keys first; then `:name` patterns, which capture one path segment each. */
function router(
  routes: Record<string, Handler>,
): (method: string, path: string) => { handler: Handler; params: Record<string, string> } | null {
  const patterns: Pattern[] = [];
  for (const [key, handler] of Object.entries(routes)) {
    const [method = '', path = ''] = key.split(' ');
    if (path.includes('/:')) patterns.push({ method, segments: path.split('/'), handler });
  }
  return (method, path) => {
    const exact = routes[`${method} ${path}`];
    if (exact !== undefined) return { handler: exact, params: {} };
    const segments = path.split('/');
    for (const pattern of patterns) {
      if (pattern.method !== method || pattern.segments.length !== segments.length) continue;
      const params: Record<string, string> = {};
      const matches = pattern.segments.every((want, i) => {
        const got = segments[i] ?? '';
        if (!want.startsWith(':')) return want === got;
        params[want.slice(1)] = decodeURIComponent(got);
        return got !== '';
      });
      if (matches) return { handler: pattern.handler, params };
    }
    return null;
  };
}

export async function startFake(options: FakeOptions): Promise<FakeServer> {
  const requests: RecordedRequest[] = [];
  const overrides: Override[] = [];
  const route = router(options.routes);
  const hub = createStreamHub(
    options.streamError ?? { type: 'server_error', message: 'The server had an error while processing your request.' },
  );
  const invalid = options.invalid ?? ((message: string): Reply => ({ status: 400, body: { error: message } }));

  async function answer(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let recorded: RecordedRequest;
    try {
      recorded = await record(req);
    } catch (err) {
      // A body the fake cannot read gets the provider's 400; the rest of it is drained, not left hanging.
      req.resume();
      return send(res, invalid(err instanceof Error ? err.message : String(err)));
    }
    requests.push(recorded);
    const override = overrides.shift();
    if (override?.kind === 'hang') return;
    if (override?.kind === 'reply') return send(res, override.reply);
    const refused = options.authenticate?.(recorded);
    if (refused) return send(res, refused);
    const match = route(recorded.method, recorded.path);
    if (match === null) return send(res, options.notFound(recorded));
    const reply = await match.handler(recorded, match.params);
    if ('events' in reply) return hub.write(res, reply, recorded);
    send(res, reply);
  }

  const server = createServer((req, res) => {
    answer(req, res).catch((err: unknown) => {
      // A fake's own bug must fail the test loudly, not hang it.
      if (!res.headersSent) send(res, { status: 500, body: { error: `fake failed: ${String(err)}` } });
      else res.destroy();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;

  return {
    origin: `http://127.0.0.1:${port}`,
    requests,
    streams: hub.streams,
    failNext(status, body, headers) {
      overrides.push({ kind: 'reply', reply: headers === undefined ? { status, body } : { status, body, headers } });
    },
    hangNext() {
      overrides.push({ kind: 'hang' });
    },
    failMidStreamNext: hub.failMidStreamNext,
    slowStreamNext: hub.slowStreamNext,
    lingerNext: hub.lingerNext,
    streamErrorNext: hub.streamErrorNext,
    nextStream: hub.nextStream,
    lastStreamEnded: hub.lastStreamEnded,
    lastStreamClosedByClient: hub.lastStreamClosedByClient,
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

/**
 * The controls every fake hands its tests, whatever protocol it speaks: failure overrides, stream records
 * and, through `script`, the usage and output it reports.
 */
export function fakeControls(server: FakeServer, script: ScriptControls) {
  return {
    requests: server.requests,
    setUsage: script.setUsage,
    setOutput: script.setOutput,
    failNext: server.failNext,
    hangNext: server.hangNext,
    streams: server.streams,
    failMidStreamNext: server.failMidStreamNext,
    slowStreamNext: server.slowStreamNext,
    lingerNext: server.lingerNext,
    streamErrorNext: server.streamErrorNext,
    nextStream: server.nextStream,
    lastStreamEnded: server.lastStreamEnded,
    lastStreamClosedByClient: server.lastStreamClosedByClient,
    close: server.close,
  };
}
