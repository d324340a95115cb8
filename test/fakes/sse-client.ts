import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';

// Minimal SSE readers for tests: what a client sees on the wire, before any SDK interprets it (a whole body
// parsed at once, or a live stream read event by event).

export interface SseEvent {
  event: string | null;
  data: string;
}

export function parseSse(text: string): SseEvent[] {
  return text
    .split('\n\n')
    .filter((block) => block.trim() !== '')
    .map((block) => {
      let event: string | null = null;
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith('event: ')) event = line.slice(7);
        if (line.startsWith('data: ')) data.push(line.slice(6));
      }
      return { event, data: data.join('\n') };
    });
}

/** POSTs JSON and returns the raw response. */
export function postJson(
  url: string,
  body: unknown,
  headers: Record<string, string> = {},
  signal?: AbortSignal,
): Promise<Response> {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    signal,
  });
}

/** One server-sent event as a client reads it off the wire; `data` parsed as JSON. */
export interface WireEvent {
  id: string | null;
  event: string;
  data: any;
}

/** A live event stream over a raw socket, read event by event. */
export interface LiveStream {
  status: number;
  contentType: string;
  /** Everything the answer carried (e.g. an error body), once it ended. */
  text(): Promise<string>;
  /** The next event, or null once the stream ended. */
  next(): Promise<WireEvent | null>;
  close(): void;
}

export interface LiveStreamRequest {
  port: number;
  method?: 'GET' | 'POST';
  path: string;
  headers?: Record<string, string>;
  /** A JSON body, sent with `content-type: application/json`. */
  body?: unknown;
}

/** Opens an event stream without an agent (its own connection), resolving once the head arrived. */
export function openLiveStream({
  port,
  method = 'GET',
  path,
  headers = {},
  body,
}: LiveStreamRequest): Promise<LiveStream> {
  return new Promise((resolve, reject) => {
    let req!: ClientRequest;
    const onResponse = (res: IncomingMessage) => {
      let buffer = '';
      let raw = '';
      const ready: WireEvent[] = [];
      let ended = false;
      let waiter: (() => void) | null = null;
      const wait = () => new Promise<void>((r) => (waiter = r));
      const wake = () => {
        const w = waiter;
        waiter = null;
        w?.();
      };
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        raw += chunk;
        buffer += chunk;
        let cut;
        while ((cut = buffer.indexOf('\n\n')) >= 0) {
          const lines = buffer
            .slice(0, cut)
            .split('\n')
            .filter((l) => !l.startsWith(':'));
          buffer = buffer.slice(cut + 2);
          const field = (name: string) => lines.find((l) => l.startsWith(`${name}: `))?.slice(name.length + 2) ?? null;
          const event = field('event');
          if (event !== null) ready.push({ id: field('id'), event, data: JSON.parse(field('data')!) });
        }
        wake();
      });
      const finish = () => {
        ended = true;
        wake();
      };
      res.on('end', finish);
      res.on('close', finish);
      resolve({
        status: res.statusCode ?? 0,
        contentType: String(res.headers['content-type']),
        async text() {
          while (!ended) await wait();
          return raw;
        },
        async next() {
          while (ready.length === 0 && !ended) await wait();
          return ready.shift() ?? null;
        },
        close: () => req.destroy(),
      });
    };
    const sent = body === undefined ? undefined : JSON.stringify(body);
    const allHeaders = sent === undefined ? headers : { 'content-type': 'application/json', ...headers };
    req = httpRequest({ host: '127.0.0.1', port, method, path, headers: allHeaders, agent: false }, onResponse);
    req.on('error', reject);
    req.end(sent);
  });
}
