// A stand-in for llama.cpp's llama-server, spawned by the service under test as the real binary would be:
// the same flags (`--model`, `--host`, `--port`, `-c`, `-t`, `-ngl`, `-np`, `-b`), `--version` on stderr,
// GET /health answering 503 while "loading" and 200 once ready, GET /v1/models and POST /v1/chat/completions
// (also streamed). How it behaves comes from the model file's name, so one test can run several kinds:
//   crash   exits with status 1 soon after it starts, never healthy
//   slow    stays "loading" for 600 ms instead of 50 ms
//   wedge   healthy for its first three health checks, then every one answers 500 (three, not one: a probe
//           the service gave up on, 100 ms in the tests, on a loaded machine must not leave it never healthy)
//   stubborn  ignores SIGTERM (only SIGKILL stops it)
// With FAKE_LLAMA_SERVER_RECORD set to a directory, each start writes `<pid>.json` there: its argv and port.

import { writeFileSync } from 'node:fs';
import { createServer } from 'node:http';
import { basename, join } from 'node:path';

const argv = process.argv.slice(2);
if (argv.includes('--version')) {
  process.stderr.write('version: 4521 (a6744e43)\nbuilt with fake for x86_64-linux-gnu\n');
  process.exit(0);
}

function flag(...names) {
  for (let i = 0; i < argv.length - 1; i++) if (names.includes(argv[i])) return argv[i + 1];
  return undefined;
}

const model = flag('-m', '--model');
const port = Number(flag('--port') ?? 8080);
const host = flag('--host') ?? '127.0.0.1';
if (!model) {
  process.stderr.write('error: --model is required\n');
  process.exit(1);
}
const name = basename(model);
const modelId = name;

if (process.env.FAKE_LLAMA_SERVER_RECORD) {
  writeFileSync(
    join(process.env.FAKE_LLAMA_SERVER_RECORD, `${process.pid}.json`),
    JSON.stringify({ pid: process.pid, argv, port, model: name }),
  );
}

if (name.includes('crash')) {
  setTimeout(() => process.exit(1), 30);
} else {
  const readyAt = Date.now() + (name.includes('slow') ? 600 : 50);
  let servedHealthy = 0;
  const json = (res, status, body) => {
    res.writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
    res.end(JSON.stringify(body));
  };
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      const path = (req.url ?? '/').split('?')[0];
      if (req.method === 'GET' && path === '/health') {
        if (Date.now() < readyAt)
          return json(res, 503, { error: { code: 503, message: 'Loading model', type: 'unavailable_error' } });
        if (name.includes('wedge') && servedHealthy >= 3)
          return json(res, 500, { error: { code: 500, message: 'wedged', type: 'server_error' } });
        servedHealthy++;
        return json(res, 200, { status: 'ok' });
      }
      if (Date.now() < readyAt)
        return json(res, 503, { error: { code: 503, message: 'Loading model', type: 'unavailable_error' } });
      if (req.method === 'GET' && path === '/v1/models') {
        return json(res, 200, {
          object: 'list',
          data: [{ id: modelId, object: 'model', created: 1_700_000_000, owned_by: 'llamacpp' }],
        });
      }
      if (req.method === 'POST' && path === '/v1/chat/completions') {
        let parsed;
        try {
          parsed = JSON.parse(body);
        } catch {
          return json(res, 400, { error: { code: 400, message: 'invalid JSON', type: 'invalid_request_error' } });
        }
        const text = `fake llama-server on port ${port} answers`;
        const usage = { prompt_tokens: 7, completion_tokens: 5, total_tokens: 12 };
        const id = 'chatcmpl-fake';
        const created = Math.floor(Date.now() / 1000);
        if (parsed.stream) {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          const chunk = (delta, finish, extra = {}) =>
            res.write(
              `data: ${JSON.stringify({
                id,
                object: 'chat.completion.chunk',
                created,
                model: modelId,
                choices: [{ index: 0, delta, finish_reason: finish }],
                ...extra,
              })}\n\n`,
            );
          chunk({ role: 'assistant', content: '' }, null);
          for (const word of text.split(' ')) chunk({ content: `${word} ` }, null);
          chunk({}, 'stop', parsed.stream_options?.include_usage ? { usage } : {});
          res.end('data: [DONE]\n\n');
          return;
        }
        return json(res, 200, {
          id,
          object: 'chat.completion',
          created,
          model: modelId,
          choices: [{ index: 0, message: { role: 'assistant', content: text }, finish_reason: 'stop' }],
          usage,
        });
      }
      json(res, 404, { error: { code: 404, message: 'File Not Found', type: 'not_found_error' } });
    });
  });
  server.listen(port, host);
  server.on('error', (err) => {
    process.stderr.write(`error: ${err.message}\n`);
    process.exit(1);
  });
  const stop = () => server.close(() => process.exit(0));
  process.on('SIGTERM', name.includes('stubborn') ? () => undefined : stop);
  process.on('SIGINT', stop);
}
