import assert from 'node:assert/strict';
import { request } from 'node:http';
import { after, before, it } from 'node:test';
import { startRawFake, type RawFake } from '../fakes/raw.ts';
import { prng } from '../helpers/prng.ts';
import { startService, type TestService } from '../helpers/service.ts';

// W2.6: the service survives a bounded, seeded fuzz of upstream answers (status lines, headers, framings,
// bodies, event streams, IDs of any length). Each call is answered with what the upstream said, relayed, or
// with an envelope of an upstream code, never INTERNAL, and the service keeps serving.

const SEED = 0xf022;
const CASES = 160;
const KEY = `fuzz-upstream-key-${process.pid}`;

let svc: TestService;
let raw: RawFake;

before(async () => {
  raw = await startRawFake();
  svc = await startService();
  const provider = await svc.request('POST', '/v1/providers', {
    body: { id: 'raw', kind: 'openai', baseUrl: `${raw.origin}/v1`, credential: KEY },
  });
  assert.equal(provider.status, 201, provider.text);
  const model = await svc.request('POST', '/v1/catalog/models', {
    body: { providerId: 'raw', upstreamModelId: 'gpt-fuzz', families: ['styleA.chat_completions', 'styleA.responses'] },
  });
  assert.equal(model.status, 201, model.text);
});
after(async () => {
  await svc.stop();
  await raw.close();
});

interface Case {
  path: '/v1/chat/completions' | '/v1/responses';
  stream: boolean;
  pieces: string[];
}

function cases(): Case[] {
  const random = prng(SEED);
  const int = (n: number) => Math.floor(random() * n);
  const pick = <T>(list: readonly T[]): T => list[Math.floor(random() * list.length)]!;
  const junk = (n: number) => Array.from({ length: n }, () => String.fromCharCode(int(256))).join('');
  const id = () =>
    pick(['resp_', 'chatcmpl-', '', 'x']) +
    pick(['a', 'é', '\u0000', '%', '/', '\r\n']).repeat(pick([1, 50, 1978, 1979, 4000, 20_000]));
  const out: Case[] = [];
  for (let i = 0; i < CASES; i++) {
    const path = pick(['/v1/chat/completions', '/v1/responses'] as const);
    const stream = random() < 0.5;
    // About a third are well-formed answers (odd IDs and usage inside), so that relaying is fuzzed too.
    const valid = random() < 0.35;
    const status = pick([
      '200 OK',
      '200 OK',
      '201 X',
      '2OO WHAT',
      '400 Bad',
      '401 No',
      '404 No',
      '429 Slow',
      '500 Oops',
      '503 Busy',
      '999 Odd',
      '099 Low',
      '',
      'OK',
    ]);
    const statusLine = valid
      ? 'HTTP/1.1 200 OK'
      : pick([`HTTP/1.1 ${status}`, `HTTP/1.0 ${status}`, `HTTP/2 ${status}`, `ICY ${status}`, junk(int(40))]);
    const sse = random() < 0.5;
    const json = JSON.stringify(
      path === '/v1/responses'
        ? {
            id: id(),
            object: 'response',
            status: 'completed',
            output: [],
            usage: { input_tokens: int(1e9), output_tokens: pick([1, -1, 1e300, 'x', null]) },
          }
        : {
            id: id(),
            object: 'chat.completion',
            choices: [{ index: 0, message: { role: 'assistant', content: 'hi' }, finish_reason: 'stop' }],
            usage: { prompt_tokens: pick([1, -5, 'a', null, 2 ** 60]), completion_tokens: 2 },
          },
    );
    const events = Array.from({ length: int(6) }, () =>
      pick([
        `data: ${JSON.stringify({
          id: id(),
          object: 'chat.completion.chunk',
          choices: [{ index: 0, delta: { content: 'x' } }],
        })}\n\n`,
        `event: response.created\ndata: ${JSON.stringify({ type: 'response.created', response: { id: id() } })}\n\n`,
        `data: ${junk(int(200))}\n\n`,
        `data: [DONE]\n\n`,
        `: keepalive\n\n`,
        junk(int(100)),
        `data: {"usage":{"prompt_tokens":${pick(['1', '-1', '1e999', '"x"', 'null'])}}}\n\n`,
      ]),
    ).join('');
    const body = valid
      ? sse
        ? events
        : json
      : pick([sse ? events : json, json.slice(0, int(json.length)), junk(int(500)), '', '{}', '[]', 'null']);
    const contentType = valid
      ? sse
        ? 'text/event-stream'
        : 'application/json'
      : pick([
          sse ? 'text/event-stream' : 'application/json',
          'application/json',
          'text/event-stream',
          'text/html',
          junk(10),
          '',
        ]);
    const extraHeaders = Array.from({ length: valid ? 0 : int(4) }, () =>
      pick([
        `x-ratelimit-remaining-requests: ${pick(['1', '-1', 'abc', '1e99'])}`,
        `retry-after: ${pick(['1', '-3', 'soon', '99999999999'])}`,
        `x-a: ${'v'.repeat(int(20_000))}`,
        `set-cookie: a=b`,
        `${junk(5)}: x`,
        `x-b: a\u0001b`,
      ]),
    );
    const framing = valid ? 'length' : pick(['length', 'length', 'short', 'long', 'chunked', 'chunked-cut', 'none']);
    const bytes = Buffer.byteLength(body, 'latin1');
    const headers = [`content-type: ${contentType}`, ...extraHeaders];
    let payload = body;
    if (framing === 'length') headers.push(`content-length: ${bytes}`);
    else if (framing === 'short') headers.push(`content-length: ${Math.max(0, bytes - 1 - int(10))}`);
    else if (framing === 'long') headers.push(`content-length: ${bytes + 1 + int(1000)}`);
    else if (framing.startsWith('chunked')) {
      headers.push('transfer-encoding: chunked');
      payload = `${bytes.toString(16)}\r\n${body}\r\n` + (framing === 'chunked' ? '0\r\n\r\n' : '');
    }
    const head = `${statusLine}\r\n${headers.join('\r\n')}\r\n\r\n`;
    // Sometimes in two writes, split anywhere, so a head or an event may arrive in pieces.
    const whole = head + payload;
    const at = int(whole.length);
    out.push({ path, stream, pieces: random() < 0.5 ? [whole] : [whole.slice(0, at), whole.slice(at)] });
  }
  return out;
}

function call(path: string, stream: boolean): Promise<{ status: number; text: string }> {
  const body = JSON.stringify(
    path === '/v1/responses'
      ? { model: 'raw/gpt-fuzz', input: 'hi', stream }
      : { model: 'raw/gpt-fuzz', messages: [{ role: 'user', content: 'hi' }], stream },
  );
  return new Promise((resolve) => {
    const req = request(
      {
        host: '127.0.0.1',
        port: svc.port,
        method: 'POST',
        path,
        agent: false,
        headers: { authorization: `Bearer ${svc.adminToken}`, 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.setEncoding('latin1').on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        // A relayed stream that breaks ends the connection: what arrived until then is the answer.
        res.on('error', () => resolve({ status: res.statusCode ?? 0, text }));
        res.on('aborted', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', (err) => resolve({ status: 0, text: String(err) }));
    req.end(body);
  });
}

it(`survives ${CASES} fuzzed upstream answers, never answering INTERNAL`, async () => {
  const problems: string[] = [];
  let relayed = 0;
  for (const c of cases()) {
    raw.answerNext(...c.pieces);
    const { status, text } = await call(c.path, c.stream);
    const label = `${c.path} stream=${c.stream} ${JSON.stringify(c.pieces.join('').slice(0, 120))}`;
    if (status === 0) problems.push(`no answer: ${label}: ${text.slice(0, 200)}`);
    else if (status >= 500 && status !== 502 && status !== 503 && status !== 504) problems.push(`${status}: ${label}`);
    else if (/"code":"INTERNAL"/.test(text)) problems.push(`INTERNAL: ${label}`);
    else if (status >= 200 && status < 300) relayed++;
    if (text.includes(KEY)) problems.push(`credential in the answer: ${label}`);
  }
  assert.deepEqual(problems, []);
  assert.ok(relayed >= 20, `only ${relayed} answers relayed: the fuzz should also produce valid answers`);
  assert.equal(svc.process.exitCode, null);
  assert.equal((await svc.request('GET', '/health')).status, 200);
  assert.equal(svc.log().includes(KEY), false);
});
