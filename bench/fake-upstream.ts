// A fast styleA upstream for the bench, run as its own process. Every answer is precomputed:
//   POST .../chat/completions  -> a small chat.completion JSON, or (`"stream":true` in the body) a 20-chunk SSE
//                                 stream written at once; a final usage chunk when the body asks for it
//                                 (`include_usage`), as OpenAI does;
//   model `bench-slow`         -> an SSE stream of 200 chunks, one every 50 ms (10 s), each stamped with the
//                                 send time (epoch ms, sub-ms) in its content, for the many-agents scenario;
//   model `bench-pace`         -> the same with 64 chunks, one every 20 ms, for the stall-free scenario (h);
//   GET .../models             -> the two models.
// Listens on 127.0.0.1 only and prints `{"port":N}` on stdout.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';

const USAGE = { prompt_tokens: 12, completion_tokens: 20, total_tokens: 32 };
const JSON_BODY = Buffer.from(
  JSON.stringify({
    id: 'chatcmpl-bench',
    object: 'chat.completion',
    created: 1_700_000_000,
    model: 'bench-model',
    choices: [
      {
        index: 0,
        message: { role: 'assistant', content: 'Hello from the bench upstream, a short answer.' },
        finish_reason: 'stop',
      },
    ],
    usage: USAGE,
  }),
);
const chunk = (content: string | null, finish: string | null) =>
  `data: ${JSON.stringify({
    id: 'chatcmpl-bench',
    object: 'chat.completion.chunk',
    created: 1_700_000_000,
    model: 'bench-model',
    choices: [{ index: 0, delta: content === null ? {} : { content }, finish_reason: finish }],
  })}\n\n`;
const events: string[] = [];
for (let i = 0; i < 19; i++) events.push(chunk(`tok${i} `, null));
events.push(chunk(null, 'stop'));
const SSE_BODY = Buffer.from(events.join('') + 'data: [DONE]\n\n');
const USAGE_EVENT = `data: ${JSON.stringify({
  id: 'chatcmpl-bench',
  object: 'chat.completion.chunk',
  created: 1_700_000_000,
  model: 'bench-model',
  choices: [],
  usage: USAGE,
})}\n\n`;
const SSE_BODY_USAGE = Buffer.from(events.join('') + USAGE_EVENT + 'data: [DONE]\n\n');
const MODELS = Buffer.from(
  JSON.stringify({
    object: 'list',
    data: [
      { id: 'bench-model', object: 'model', created: 1_700_000_000, owned_by: 'bench' },
      { id: 'bench-slow', object: 'model', created: 1_700_000_000, owned_by: 'bench' },
      { id: 'bench-pace', object: 'model', created: 1_700_000_000, owned_by: 'bench' },
    ],
  }),
);
const JSON_HEAD = { 'content-type': 'application/json', 'content-length': String(JSON_BODY.length) };
const SSE_HEAD = { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' };

const SLOW = { chunks: 200, everyMs: 50 };
const PACE = { chunks: 64, everyMs: 20 };
const now = () => performance.timeOrigin + performance.now();

function slow(res: ServerResponse, usage: boolean, pace: { chunks: number; everyMs: number }): void {
  res.writeHead(200, SSE_HEAD);
  let sent = 0;
  const timer = setInterval(() => {
    if (res.destroyed) return void clearInterval(timer);
    res.write(chunk(`t=${now().toFixed(3)};`, null));
    if (++sent === pace.chunks) {
      clearInterval(timer);
      res.end((usage ? USAGE_EVENT : '') + 'data: [DONE]\n\n');
    }
  }, pace.everyMs);
  res.on('close', () => clearInterval(timer));
}

const STREAM_A = Buffer.from('"stream":true');
const STREAM_B = Buffer.from('"stream": true');
const SLOW_MODEL = Buffer.from('bench-slow');
const PACE_MODEL = Buffer.from('bench-pace');
const INCLUDE_USAGE = Buffer.from('include_usage');

function handle(req: IncomingMessage, res: ServerResponse): void {
  if (req.method === 'GET') {
    req.resume();
    if (req.url!.endsWith('/models'))
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(MODELS.length) }).end(MODELS);
    else res.writeHead(404).end();
    return;
  }
  const parts: Buffer[] = [];
  req.on('data', (c: Buffer) => parts.push(c));
  req.on('end', () => {
    if (!req.url!.endsWith('/chat/completions')) return void res.writeHead(404).end();
    const body = parts.length === 1 ? parts[0]! : Buffer.concat(parts);
    const stream = body.includes(STREAM_A) || body.includes(STREAM_B);
    if (!stream) return void res.writeHead(200, JSON_HEAD).end(JSON_BODY);
    const usage = body.includes(INCLUDE_USAGE);
    if (body.includes(SLOW_MODEL)) return slow(res, usage, SLOW);
    if (body.includes(PACE_MODEL)) return slow(res, usage, PACE);
    const out = usage ? SSE_BODY_USAGE : SSE_BODY;
    res.writeHead(200, { ...SSE_HEAD, 'content-length': String(out.length) }).end(out);
  });
}

const server = createServer({ keepAliveTimeout: 60_000 }, handle);
server.maxHeadersCount = 100;
server.headersTimeout = 60_000;
server.requestTimeout = 0;
server.listen(Number(process.argv[2] ?? 0), '127.0.0.1', () => {
  const addr = server.address();
  process.stdout.write(JSON.stringify({ port: typeof addr === 'object' && addr ? addr.port : 0 }) + '\n');
});
process.on('SIGTERM', () => process.exit(0));
