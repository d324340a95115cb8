import WebSocket from 'ws';

// A WebSocket client for the tests of GET /v1/responses (WebSocket mode): its messages parsed, awaited one by one.

export type Json = Record<string, any>;

export interface SocketClient {
  ws: WebSocket;
  /** Every message received so far, parsed. */
  received: Json[];
  send(message: unknown): void;
  /** Resolves with the first message no earlier `next` took that `match`es, waiting for it if need be. */
  next(match: (m: Json) => boolean, what?: string): Promise<Json>;
  /** Resolves with the close code and reason once the server closes. */
  closed: Promise<{ code: number; reason: string }>;
  close(): void;
}

export interface SocketAnswer {
  /** The HTTP status when the server refused the upgrade. */
  status: number;
  body: string;
}

/** Opens `ws://127.0.0.1:<port>/v1/responses`; rejects with the HTTP answer when the upgrade is refused. */
export function openSocket(
  port: number,
  headers: Record<string, string>,
  path = '/v1/responses',
): Promise<SocketClient> {
  const ws = new WebSocket(`ws://127.0.0.1:${port}${path}`, { headers, perMessageDeflate: false });
  const received: Json[] = [];
  const taken = new Set<number>();
  const waiters: (() => void)[] = [];
  ws.on('message', (data, isBinary) => {
    received.push(isBinary ? { binary: true } : (JSON.parse(String(data)) as Json));
    for (const wake of waiters.splice(0)) wake();
  });
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.on('close', (code, reason) => {
      resolve({ code, reason: String(reason) });
      for (const wake of waiters.splice(0)) wake();
    }),
  );
  const client: SocketClient = {
    ws,
    received,
    send: (message) =>
      ws.send(typeof message === 'string' || Buffer.isBuffer(message) ? message : JSON.stringify(message)),
    async next(match, what = 'a matching message') {
      for (;;) {
        // Each message goes to one waiter: two calls' events, awaited side by side, are told apart.
        for (let i = 0; i < received.length; i++) {
          if (taken.has(i) || !match(received[i]!)) continue;
          taken.add(i);
          return received[i]!;
        }
        if (ws.readyState === WebSocket.CLOSED) throw new Error(`the socket closed before ${what}`);
        await new Promise<void>((wake) => waiters.push(wake));
      }
    },
    closed,
    close: () => ws.close(),
  };
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve(client));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () =>
        reject(Object.assign(new Error(`upgrade refused: ${res.statusCode}`), { status: res.statusCode, body })),
      );
    });
    ws.once('error', reject);
  });
}

/** The events of one call, up to and including its terminal one. */
export async function callEvents(client: SocketClient, lane?: string): Promise<Json[]> {
  const events: Json[] = [];
  for (;;) {
    const m = await client.next((e) => lane === undefined || e.stream_id === lane, 'the end of the call');
    events.push(m);
    if (['response.completed', 'response.incomplete', 'response.failed', 'error'].includes(m.type)) return events;
  }
}
