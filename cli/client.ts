import { readFileSync } from 'node:fs';
import { request, type IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { locateInstance } from '../bin/locate.js';

// How a CLI command reaches the running service: its port and data directory from the instance file it
// wrote (bin/locate.js), the admin token from that data directory (or SWITCHYARD_TOKEN, e.g. a paired
// token), node:http (global fetch loads undici on first use: ~90 ms of a command's ~100). Errors carry the exit
// code the command ends with; none of them holds the token.

export const EXIT = { ok: 0, failed: 1, usage: 2, noService: 3 } as const;

export class CliError extends Error {
  constructor(
    message: string,
    readonly exitCode: number,
  ) {
    super(message);
  }
}

/** An answer whose body has not been read yet: read it whole, or chunk by chunk (event streams). */
export interface Answer {
  status: number;
  text(): Promise<string>;
  chunks: AsyncIterable<Buffer>;
  close(): void;
}

export interface Client {
  url: string;
  /**
   * Answers 2xx as parsed JSON, typed as the route's answer `T` (protocol/http) without a check: the service's
   * own answer; any other status throws a CliError with the error envelope's message.
   */
  call<T = unknown>(method: string, path: string, body?: unknown): Promise<T>;
  /** The raw answer, for commands that read the status themselves. */
  send(method: string, path: string, body?: unknown, withToken?: boolean): Promise<Answer>;
}

export function connect(env: NodeJS.ProcessEnv = process.env): Client {
  const instance = locateInstance(env);
  if (instance === null) {
    throw new CliError(
      'No running Switchyard service found. Start one with `switchyard start` (or set SWITCHYARD_PORT or ' +
        'SWITCHYARD_HOME).',
      EXIT.noService,
    );
  }
  const url = `http://127.0.0.1:${instance.port}`;
  let token = env.SWITCHYARD_TOKEN?.trim() || null;
  if (token === null) {
    try {
      token = readFileSync(join(instance.dataDir, 'token'), 'utf8').trim();
    } catch {
      token = null;
    }
  }
  const send = (method: string, path: string, body?: unknown, withToken = true): Promise<Answer> => {
    const headers: Record<string, string> = { accept: 'application/json' };
    if (withToken && token) headers.authorization = `Bearer ${token}`;
    const payload = body === undefined ? undefined : JSON.stringify(body);
    if (payload !== undefined) headers['content-type'] = 'application/json';
    return new Promise((resolve, reject) => {
      const req = request(url + path, { method, headers, agent: false }, (res: IncomingMessage) => {
        resolve({
          status: res.statusCode ?? 0,
          chunks: res,
          close: () => res.destroy(),
          text: async () => {
            const parts: Buffer[] = [];
            for await (const chunk of res) parts.push(chunk as Buffer);
            return Buffer.concat(parts).toString('utf8');
          },
        });
      });
      req.on('error', (err) =>
        reject(new CliError(`Could not reach the service at ${url}: ${err.message}`, EXIT.noService)),
      );
      req.end(payload);
    });
  };
  return {
    url,
    send,
    async call<T>(method: string, path: string, body?: unknown): Promise<T> {
      const res = await send(method, path, body);
      const text = await res.text();
      let json: unknown;
      try {
        json = text === '' ? undefined : JSON.parse(text);
      } catch {
        json = undefined;
      }
      if (res.status >= 200 && res.status < 300) return json as T;
      const message = envelopeMessage(json) ?? `HTTP ${res.status}`;
      const hint =
        res.status === 401
          ? ' (no usable token: run it as the user who started the service, or set SWITCHYARD_TOKEN)'
          : '';
      throw new CliError(`${message}${hint}`, EXIT.failed);
    },
  };
}

/** The message of an error envelope (`{ error: { message } }`); undefined when `json` is none. */
export function envelopeMessage(json: unknown): string | undefined {
  const error = (json as { error?: { message?: unknown } } | null | undefined)?.error;
  return typeof error?.message === 'string' ? error.message : undefined;
}

export interface SseFrame {
  id: string | null;
  event: string;
  /** The parsed JSON of the frame's data, or its text when that is not JSON. */
  data: unknown;
}

/** Reads a text/event-stream answer frame by frame; comments (keep-alives) are skipped. */
export async function* readEvents(answer: Answer): AsyncGenerator<SseFrame> {
  const decoder = new TextDecoder();
  let buffer = '';
  for await (const chunk of answer.chunks) {
    buffer += decoder.decode(chunk, { stream: true });
    let cut;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let id: string | null = null;
      let event = 'message';
      const data: string[] = [];
      for (const line of block.split('\n')) {
        if (line.startsWith(':')) continue;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        const value = colon < 0 ? '' : line.slice(colon + 1).replace(/^ /, '');
        if (field === 'id') id = value;
        else if (field === 'event') event = value;
        else if (field === 'data') data.push(value);
      }
      if (data.length === 0) continue;
      let parsed: unknown;
      try {
        parsed = JSON.parse(data.join('\n'));
      } catch {
        parsed = data.join('\n');
      }
      yield { id, event, data: parsed };
    }
  }
}
