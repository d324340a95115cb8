import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { after, before, describe, test } from 'node:test';
import { startEchoFake, type EchoFake } from '../fakes/echo.ts';
import { httpAnswer, startRawFake, type RawFake } from '../fakes/raw.ts';
import { startService, type TestService } from '../helpers/service.ts';

// Upstreams that misbehave, through the real service: one that echoes the credential it was sent (whole,
// streamed with the credential cut across two writes, in an error), one that writes bytes that are not
// HTTP, and query strings on their way upstream. An inference-scope client must never see the stored
// credential, a broken answer is 502 UPSTREAM_ERROR with the envelope, and the service stays up.

// Shaped like nothing protocol/redact.ts knows: only the relay's scrubbing keeps these out.
const OPENAI_KEY = `echo-openai-credential-${process.pid}-Zq9Wx7`;
const ANTHROPIC_KEY = `echo-anthropic-credential-${process.pid}-Lm4Pv2`;
const halves = (key: string) => [
  key.slice(0, key.length - Math.floor(key.length / 2)),
  key.slice(key.length - Math.floor(key.length / 2)),
];

let svc: TestService;
let echo: EchoFake;
let raw: RawFake;
let inference: string;

async function created(path: string, body: unknown): Promise<void> {
  const reply = await svc.request('POST', path, { body });
  assert.equal(reply.status, 201, reply.text);
}

before(async () => {
  echo = await startEchoFake();
  raw = await startRawFake();
  svc = await startService();
  await created('/v1/providers', { id: 'echoa', kind: 'openai', baseUrl: `${echo.origin}/v1`, credential: OPENAI_KEY });
  await created('/v1/providers', { id: 'echob', kind: 'anthropic', baseUrl: echo.origin, credential: ANTHROPIC_KEY });
  await created('/v1/providers', { id: 'raw', kind: 'openai_compatible', baseUrl: `${raw.origin}/v1` });
  await created('/v1/catalog/models', {
    providerId: 'echoa',
    upstreamModelId: 'm',
    families: ['styleA.chat_completions'],
  });
  await created('/v1/catalog/models', { providerId: 'echob', upstreamModelId: 'm', families: ['styleB.messages'] });
  await created('/v1/catalog/models', {
    providerId: 'raw',
    upstreamModelId: 'm',
    families: ['styleA.chat_completions'],
  });
  const token = await svc.request('POST', '/v1/tokens', { body: { name: 'client', scopes: ['inference'] } });
  assert.equal(token.status, 201, token.text);
  svc.markSecretBearing(token);
  inference = token.json.secret;
});
after(async () => {
  await svc?.stop();
  await echo?.close();
  await raw?.close();
});

const chat = (model: string, content: string, stream = false) => ({
  model,
  messages: [{ role: 'user', content }],
  ...(stream && { stream: true }),
});
const messages = (content: string, stream = false) => ({ ...chat('echob/m', content, stream), max_tokens: 64 });

interface Streamed {
  status: number;
  requestId: string;
  /** Everything received so far. */
  text(): string;
  /** Resolves once what was received satisfies `done`. */
  until(done: (text: string) => boolean): Promise<void>;
  ended: Promise<void>;
}

/** A streamed call as an inference-scope client, read as it arrives. */
function stream(path: string, body: unknown): Promise<Streamed> {
  return new Promise((resolve, reject) => {
    const payload = JSON.stringify(body);
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port: svc.port,
        method: 'POST',
        path,
        agent: false,
        headers: {
          authorization: `Bearer ${inference}`,
          'content-type': 'application/json',
          'anthropic-version': '2023-06-01',
        },
      },
      (res) => {
        let text = '';
        const waiters = new Set<{ done: (t: string) => boolean; wake: () => void }>();
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          text += d;
          for (const w of waiters) if (w.done(text)) waiters.delete(w), w.wake();
        });
        const ended = new Promise<void>((r) => res.on('end', () => r()));
        resolve({
          status: res.statusCode ?? 0,
          requestId: String(res.headers['x-service-request-id']),
          text: () => text,
          until: (done) =>
            done(text) ? Promise.resolve() : new Promise<void>((wake) => void waiters.add({ done, wake })),
          ended,
        });
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

function assertNoKey(text: string, key: string): void {
  assert.equal(text.includes(key), false, 'the credential reached the client');
  for (const half of halves(key))
    assert.equal(text.includes(half), false, `half of the credential reached the client: ${text}`);
}

describe('an upstream that echoes the stored credential', () => {
  test(
    'a whole JSON answer and its headers arrive with the credential masked and a Content-Length that ' + 'fits',
    async () => {
      const reply = await svc.request('POST', '/v1/chat/completions', {
        token: inference,
        body: chat('echoa/m', 'hi'),
      });
      assert.equal(reply.status, 200, reply.text);
      assert.equal(reply.json.choices[0].message.content, 'authorization: Bearer [redacted]');
      assert.equal(Number(reply.headers['content-length']), Buffer.byteLength(reply.text));
      assert.equal(reply.headers['x-ratelimit-echo'], 'authorization: Bearer [redacted]');
      assertNoKey(JSON.stringify(reply.headers) + reply.text, OPENAI_KEY);
      const b = await svc.request('POST', '/v1/messages', {
        token: inference,
        body: messages('hi'),
        headers: { 'anthropic-version': '2023-06-01' },
      });
      assert.equal(b.status, 200, b.text);
      assert.equal(b.json.content[0].text, 'x-api-key: [redacted]');
      assertNoKey(b.text, ANTHROPIC_KEY);
    },
  );

  for (const [label, path, body, key] of [
    ['a styleA chat stream', '/v1/chat/completions', chat('echoa/m', 'hi', true), OPENAI_KEY],
    ['a styleB messages stream', '/v1/messages', messages('hi', true), ANTHROPIC_KEY],
  ] as const) {
    test(`${label} whose credential the upstream cut across two writes arrives masked`, async () => {
      const got = await stream(path, body);
      assert.equal(got.status, 200);
      // The client already has the events before the cut: the relay read the first half on its own.
      await got.until((t) => t.includes(path === '/v1/messages' ? 'content_block_start' : '"role":"assistant"'));
      assertNoKey(got.text(), key);
      echo.releaseSecondHalf();
      await got.ended;
      const text = got.text();
      assert.ok(text.includes('[redacted]'), text);
      assertNoKey(text, key);
      assert.ok(text.trimEnd().endsWith(path === '/v1/messages' ? '{"type":"message_stop"}' : 'data: [DONE]'), text);
      const line = await svc.waitForLog((l) => l.msg === 'usage' && l.reqId === got.requestId);
      assert.equal(line.outcome, 'ok');
      const usage = line.usage as { inputTokens: number; outputTokens: number };
      assert.deepEqual([usage.inputTokens, usage.outputTokens], [5, 7], 'usage still read from the scrubbed stream');
    });
  }

  test('an error body that quotes the header is relayed without the credential', async () => {
    for (const [path, body, key] of [
      ['/v1/chat/completions', chat('echoa/m', 'error'), OPENAI_KEY],
      ['/v1/messages', messages('error'), ANTHROPIC_KEY],
    ] as const) {
      const reply = await svc.request('POST', path, {
        token: inference,
        body,
        headers: { 'anthropic-version': '2023-06-01' },
      });
      assert.equal(reply.status, 400, reply.text);
      assert.equal(reply.json.error.code, 'UPSTREAM_ERROR');
      assert.match(
        reply.json.error.details.upstreamMessage,
        /^Request refused; headers received: (authorization: Bearer|x-api-key:) \[redacted\]$/,
      );
      assertNoKey(reply.text, key);
    }
  });
});

describe('gateway query strings', () => {
  test('only the documented parameters go upstream, re-encoded', async () => {
    const before = echo.urls.length;
    const reply = await svc.request('POST', '/v1/messages?beta=true&debug=1&x%0D%0Ay=2', {
      token: inference,
      body: messages('hi'),
      headers: { 'anthropic-version': '2023-06-01' },
    });
    assert.equal(reply.status, 200, reply.text);
    assert.deepEqual(echo.urls.slice(before), ['/v1/messages?beta=true']);
    const chatReply = await svc.request('POST', '/v1/chat/completions?api-version=2024-10-21&trace=1', {
      token: inference,
      body: chat('echoa/m', 'hi'),
    });
    assert.equal(chatReply.status, 200, chatReply.text);
    assert.equal(echo.urls.at(-1), '/v1/chat/completions?api-version=2024-10-21');
  });

  test('a control byte in a forwarded parameter is 400 INVALID_REQUEST, and nothing goes upstream', async () => {
    const before = echo.urls.length;
    const reply = await svc.request('POST', '/v1/messages?beta=true%0D%0AX-Injected:%201', {
      token: inference,
      body: messages('hi'),
      headers: { 'anthropic-version': '2023-06-01' },
    });
    assert.equal(reply.status, 400, reply.text);
    assert.equal(reply.json.error.code, 'INVALID_REQUEST');
    assert.equal(reply.json.error.param, 'beta');
    assert.equal(echo.urls.length, before);
  });
});

const JSON_HEAD = 'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n';
const SSE_HEAD = 'HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\ntransfer-encoding: chunked\r\n\r\n';
const chunk = (text: string) => `${Buffer.byteLength(text).toString(16)}\r\n${text}\r\n`;
const CHAT_CHUNK = `data: ${JSON.stringify({
  id: 'c1',
  object: 'chat.completion.chunk',
  created: 1,
  model: 'm',
  choices: [{ index: 0, delta: { role: 'assistant', content: 'hi' }, finish_reason: null }],
})}\n\n`;

describe('an upstream that does not speak HTTP/1.1 properly', () => {
  for (const [label, pieces, reason] of [
    [
      'a bad status line (HTTP/1.1 2OO WHAT)',
      ['HTTP/1.1 2OO WHAT\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}'],
      'malformed_http',
    ],
    [
      'a control byte in a header name',
      [`${JSON_HEAD}x-bad\u0001: v\r\ncontent-length: 2\r\n\r\n{}`],
      'malformed_http',
    ],
    ['a NUL in a header value', [`${JSON_HEAD}x-bad: a\u0000b\r\ncontent-length: 2\r\n\r\n{}`], 'malformed_http'],
    [
      'a chunk size that is not hex',
      [`${JSON_HEAD}transfer-encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n`],
      'malformed_http',
    ],
    [
      'a chunked body cut before its last chunk',
      [`${JSON_HEAD}transfer-encoding: chunked\r\n\r\n${chunk('{"id":"chatcmpl-1",')}`],
      'truncated',
    ],
    [
      'a Content-Length longer than the body',
      [`${JSON_HEAD}content-length: 500\r\n\r\n{"id":"chatcmpl-1"}`],
      'truncated',
    ],
  ] as const) {
    test(`${label} is 502 UPSTREAM_ERROR with the envelope`, async () => {
      raw.answerNext(...pieces);
      const reply = await svc.request('POST', '/v1/chat/completions', { token: inference, body: chat('raw/m', 'hi') });
      assert.equal(reply.status, 502, reply.text);
      assert.equal(reply.json.type, 'error');
      assert.equal(reply.json.error.code, 'UPSTREAM_ERROR');
      assert.equal(reply.json.error.details.reason, reason, reply.text);
      assert.equal(reply.json.error.details.providerId, 'raw');
      assert.match(reply.json.request_id, /^req_/);
    });
  }

  for (const [label, pieces] of [
    ['a stream cut before its last chunk', [SSE_HEAD + chunk(CHAT_CHUNK)]],
    ['a stream with a chunk size that is not hex', [SSE_HEAD + chunk(CHAT_CHUNK), 'zz\r\nxx\r\n']],
  ] as const) {
    test(`${label} ends the client's stream with event: error carrying UPSTREAM_ERROR`, async () => {
      raw.answerNext(...pieces);
      const got = await stream('/v1/chat/completions', {
        ...chat('raw/m', 'hi', true),
        stream_options: { include_usage: true },
      });
      await got.ended;
      assert.equal(got.status, 200);
      const events = got.text().trim().split(/\n\n/);
      assert.equal(events[0], CHAT_CHUNK.trim());
      const last = events.at(-1)!;
      assert.match(last, /^event: error\ndata: /);
      const envelope = JSON.parse(last.slice(last.indexOf('data: ') + 6));
      assert.equal(envelope.type, 'error');
      assert.equal(envelope.error.code, 'UPSTREAM_ERROR');
    });
  }

  test('the service is still up, logged no internal error, and answers a good upstream as before', async () => {
    raw.answerNext(
      httpAnswer(
        200,
        'application/json',
        JSON.stringify({
          id: 'chatcmpl-ok',
          object: 'chat.completion',
          created: 1,
          model: 'm',
          choices: [],
          usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
        }),
      ),
    );
    const ok = await svc.request('POST', '/v1/chat/completions', { token: inference, body: chat('raw/m', 'hi') });
    assert.equal(ok.status, 200, ok.text);
    assert.equal(ok.json.id, 'chatcmpl-ok');
    assert.equal((await svc.request('GET', '/health', { token: null })).status, 200);
    assert.equal(svc.process.exitCode, null);
    assert.deepEqual(
      svc.logLines().filter((l) => l.msg === 'internal error'),
      [],
    );
  });
});

describe('echoed client input', () => {
  test(
    'a token glued to a letter or an underscore in a query parameter name is not echoed ' + '(?xsk-svc-...=1)',
    async () => {
      for (const name of [`x${inference}`, `_${inference}`]) {
        const reply = await svc.request('GET', `/v1/audit-events?${name}=1`);
        assert.equal(reply.status, 400, reply.text);
        assert.equal(reply.json.error.code, 'INVALID_REQUEST');
        assert.equal(reply.text.includes(inference), false, reply.text);
        assert.equal(reply.json.error.param, `${name[0]}[redacted]`);
      }
    },
  );
});

describe('leaks', () => {
  test('no credential or inference token, nor half of one, in any response or in the log', () => {
    const everything = `${svc.responsesText()}\n${svc.log()}\n${svc.stderr()}`;
    for (const [where, text] of [
      ['responses', svc.responsesText()],
      ['log', svc.log()],
      ['stderr', svc.stderr()],
    ]) {
      assert.equal(text!.includes(inference), false, `the inference token is in the ${where}`);
    }
    for (const key of [OPENAI_KEY, ANTHROPIC_KEY]) {
      assert.equal(everything.includes(key), false);
      for (const half of halves(key)) assert.equal(everything.includes(half), false);
    }
  });
});
