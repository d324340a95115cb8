import { once } from 'node:events';
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

// An upstream that echoes the authentication headers it received into its answers, as a debugging proxy or
// a careless compatible server does: styleA chat completions (`Authorization`) and styleB messages
// (`x-api-key`), whole, streamed and as an error. A streamed answer is written in two writes that cut the
// echoed credential in half; the second waits for `releaseSecondHalf`, so a test can prove the relay saw
// the halves apart. A message whose text is "error" gets a 400 whose message quotes the header.

export interface EchoFake {
  /** The root a provider record takes as its baseUrl: `<origin>/v1` for styleA, `<origin>` for styleB. */
  origin: string;
  /** Path and query of every POST, as received. */
  urls: string[];
  /** Resolves when a stream's first write (up to the middle of the credential) has gone out. */
  firstHalfSent(): Promise<void>;
  releaseSecondHalf(): void;
  close(): Promise<void>;
}

type Echoed = { header: string; value: string };

function echoed(req: IncomingMessage): Echoed {
  const key = req.headers['x-api-key'];
  if (typeof key === 'string') return { header: 'x-api-key', value: key };
  return { header: 'authorization', value: String(req.headers.authorization ?? '') };
}

const CREATED = 1_700_000_000;

function chatWhole(model: string, text: string) {
  return {
    id: 'chatcmpl-echo1',
    object: 'chat.completion',
    created: CREATED,
    model,
    choices: [
      { index: 0, message: { role: 'assistant', content: text, refusal: null }, logprobs: null, finish_reason: 'stop' },
    ],
    usage: { prompt_tokens: 5, completion_tokens: 7, total_tokens: 12 },
  };
}

const chatChunk = (model: string, delta: Record<string, unknown>, finish: string | null = null) =>
  `data: ${JSON.stringify({
    id: 'chatcmpl-echo2',
    object: 'chat.completion.chunk',
    created: CREATED,
    model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
  })}\n\n`;

function messageWhole(model: string, text: string) {
  return {
    id: 'msg_01EchoEchoEchoEchoEcho',
    type: 'message',
    role: 'assistant',
    model,
    content: [{ type: 'text', text }],
    stop_reason: 'end_turn',
    stop_sequence: null,
    usage: { input_tokens: 5, output_tokens: 7 },
  };
}

const sse = (type: string, data: Record<string, unknown>) =>
  `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;

/** The stream's events as text, cut in two in the middle of the echoed value. */
function streamHalves(styleB: boolean, model: string, seen: Echoed): [string, string] {
  const text = `${seen.header}: ${seen.value}`;
  const marker = '\u0000CUT\u0000';
  const cutAt = text.length - Math.floor(seen.value.length / 2);
  const withCut = text.slice(0, cutAt) + marker + text.slice(cutAt);
  let events: string;
  if (styleB) {
    const message = {
      ...messageWhole(model, ''),
      content: [],
      stop_reason: null,
      usage: { input_tokens: 5, output_tokens: 1 },
    };
    events =
      sse('message_start', { message }) +
      sse('content_block_start', { index: 0, content_block: { type: 'text', text: '' } }) +
      sse('content_block_delta', { index: 0, delta: { type: 'text_delta', text: withCut } }) +
      sse('content_block_stop', { index: 0 }) +
      sse('message_delta', { delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { output_tokens: 7 } }) +
      sse('message_stop', {});
  } else {
    // The usage chunk that `stream_options.include_usage` asks for (the relay asks on the client's behalf).
    const usage = `data: ${JSON.stringify({
      id: 'chatcmpl-echo2',
      object: 'chat.completion.chunk',
      created: CREATED,
      model,
      choices: [],
      usage: chatWhole(model, '').usage,
    })}\n\n`;
    events =
      chatChunk(model, { role: 'assistant', content: '' }) +
      chatChunk(model, { content: withCut }) +
      chatChunk(model, {}, 'stop') +
      usage +
      'data: [DONE]\n\n';
  }
  // JSON.stringify wrote the marker escaped.
  const escaped = JSON.stringify(marker).slice(1, -1);
  const at = events.indexOf(escaped);
  return [events.slice(0, at), events.slice(at + escaped.length)];
}

export async function startEchoFake(): Promise<EchoFake> {
  const urls: string[] = [];
  let onFirst!: () => void;
  let first = new Promise<void>((r) => (onFirst = r));
  let release!: () => void;
  let released = new Promise<void>((r) => (release = r));

  async function answer(req: IncomingMessage, res: ServerResponse, body: string): Promise<void> {
    const styleB = req.url!.startsWith('/v1/messages');
    const parsed = JSON.parse(body) as { model: string; stream?: boolean; messages: { content: unknown }[] };
    const seen = echoed(req);
    const said = JSON.stringify(parsed.messages.at(-1)?.content ?? '');
    if (said.includes('error')) {
      const message = `Request refused; headers received: ${seen.header}: ${seen.value}`;
      const error = styleB
        ? { type: 'error', error: { type: 'invalid_request_error', message } }
        : { error: { message, type: 'invalid_request_error', param: null, code: null } };
      res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify(error));
      return;
    }
    if (parsed.stream !== true) {
      const text = `${seen.header}: ${seen.value}`;
      // Also in a header the relay lets through (rate-limit headers pass by prefix).
      const headers = { 'content-type': 'application/json', 'x-ratelimit-echo': text };
      res
        .writeHead(200, headers)
        .end(JSON.stringify(styleB ? messageWhole(parsed.model, text) : chatWhole(parsed.model, text)));
      return;
    }
    const [head, tail] = streamHalves(styleB, parsed.model, seen);
    res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
    res.write(head, () => onFirst());
    await released;
    released = new Promise<void>((r) => (release = r));
    first = new Promise<void>((r) => (onFirst = r));
    res.end(tail);
  }

  const server = createServer((req, res) => {
    // The service refreshes a new provider's models in the background: not what this fake is about.
    if (req.method !== 'POST') {
      res.writeHead(404, { 'content-type': 'application/json' }).end('{"error":{"message":"not found"}}');
      return;
    }
    urls.push(req.url ?? '');
    const parts: Buffer[] = [];
    req.on('data', (p: Buffer) => parts.push(p));
    req.on('end', () => {
      answer(req, res, Buffer.concat(parts).toString('utf8')).catch((err: unknown) => {
        if (!res.headersSent)
          res
            .writeHead(500, { 'content-type': 'application/json' })
            .end(JSON.stringify({ error: { message: `fake failed: ${String(err)}` } }));
        else res.destroy();
      });
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    urls,
    firstHalfSent: () => first,
    releaseSecondHalf: () => release(),
    async close() {
      server.closeAllConnections();
      server.close();
      await once(server, 'close');
    },
  };
}
