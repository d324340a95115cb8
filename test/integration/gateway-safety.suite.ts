import assert from 'node:assert/strict';
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import * as openaiFake from '../fakes/openai.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// What the gateway must never do (leak credentials, call upstream for a request it must refuse, hang) and
// how it maps upstream failures, through the real service and a fake OpenAI.

const KEY = `fake-upstream-key-${process.pid}`;
let svc: InProcessService;
let oa: openaiFake.OpenAIFake;

const chat = (stream = false, extra: Record<string, unknown> = {}) => ({
  model: 'openai/gpt-test',
  messages: [{ role: 'user', content: 'hello' }],
  ...(stream && { stream: true }),
  ...extra,
});

before(async () => {
  oa = await openaiFake.start({ apiKey: KEY });
  oa.setModels([{ id: 'gpt-test' }, { id: 'text-embedding-test' }]);
  svc = await startInProcess();
  assert.equal(
    (await svc.request('POST', '/v1/providers', { body: { kind: 'openai', baseUrl: oa.baseUrl, credential: KEY } }))
      .status,
    201,
  );
  assert.equal((await svc.request('POST', '/v1/providers/openai/actions/refresh-models')).status, 200);
});
after(async () => {
  await svc.stop();
  await oa.close();
});

const usageLine = (reqId: string) => svc.logLines().find((l) => l.msg === 'usage' && l.reqId === reqId);

describe('credentials and headers (global rules 3-5)', () => {
  test(
    'client credentials in every carrier, cookies and proxy headers never reach the upstream; hints ' + 'do',
    async () => {
      const before = oa.requests.length;
      const clientKeys = ['sk-client-openai-key-1234567890', 'sk-ant-client-key-1234567890', 'cookie-secret-value'];
      const reply = await svc.request('POST', '/v1/chat/completions', {
        body: chat(),
        headers: {
          'x-api-key': clientKeys[1]!,
          'x-service-token': clientKeys[0]!,
          cookie: `session=${clientKeys[2]}`,
          'proxy-authorization': 'Basic cHJveHk6cHc=',
          'x-forwarded-for': '10.9.8.7',
          forwarded: 'for=10.9.8.7',
          'openai-project': 'proj_hint',
        },
      });
      assert.equal(reply.status, 200, reply.text);
      const seen = oa.requests.slice(before);
      assert.equal(seen.length, 1);
      const raw = seen[0]!.rawHeaders.join('\n') + '\n' + seen[0]!.body;
      for (const secret of [...clientKeys, svc.adminToken, 'cHJveHk6cHc=', '10.9.8.7'])
        assert.ok(!raw.includes(secret), `upstream saw ${secret}`);
      assert.equal(
        seen[0]!.headers['authorization'],
        `Bearer ${KEY}`,
        'the service sets provider authentication itself',
      );
      assert.equal(seen[0]!.headers['openai-project'], 'proj_hint');
      assert.equal(
        seen[0]!.headers['x-service-request-id'],
        reply.headers['x-service-request-id'],
        'the request ID goes upstream',
      );
    },
  );

  test('hop-by-hop, credential-bearing and provider CORS headers are stripped; rate limits pass', async () => {
    const body = {
      id: 'chatcmpl-x',
      object: 'chat.completion',
      created: 1,
      model: 'gpt-test',
      choices: [],
      usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
    };
    oa.failNext(200, body, {
      'set-cookie': 'upstream=1',
      'access-control-allow-origin': '*',
      'access-control-allow-credentials': 'true',
      'www-authenticate': 'Bearer',
      'proxy-authenticate': 'Basic',
      'openai-organization': 'org-upstream-secret',
      'x-request-id': 'req_upstream_123',
      'x-ratelimit-remaining-requests': '99',
      'retry-after': '3',
    });
    const reply = await svc.request('POST', '/v1/chat/completions', { body: chat() });
    assert.equal(reply.status, 200, reply.text);
    for (const name of [
      'set-cookie',
      'access-control-allow-origin',
      'access-control-allow-credentials',
      'www-authenticate',
      'proxy-authenticate',
      'openai-organization',
    ]) {
      assert.equal(reply.headers[name], undefined, name);
    }
    assert.equal(reply.headers['x-ratelimit-remaining-requests'], '99');
    assert.equal(reply.headers['retry-after'], '3');
    assert.equal(reply.headers['upstream-request-id'], 'req_upstream_123');
    const ours = reply.headers['x-service-request-id'];
    assert.match(ours ?? '', /^req_[0-9A-Z]{26}$/);
    assert.equal(reply.headers['x-request-id'], ours);
    assert.equal(reply.headers['request-id'], ours);
  });
});

describe('resolution before anything leaves the edge', () => {
  test('MODEL_ENDPOINT_NOT_SUPPORTED: no relay, so no vault read and no upstream request', async () => {
    const before = oa.requests.length;
    const reply = await svc.request('POST', '/v1/embeddings', { body: { model: 'openai/gpt-test', input: 'x' } });
    assert.equal(reply.status, 400);
    assert.equal(reply.json.error.code, 'MODEL_ENDPOINT_NOT_SUPPORTED');
    assert.equal(reply.json.error.param, 'model');
    // Words for people in the message; the family ID stays in the details.
    assert.equal(reply.json.error.message, '`openai/gpt-test` does not support OpenAI-style embeddings.');
    assert.equal(reply.json.error.details.family, 'styleA.embeddings');
    assert.equal(oa.requests.length, before);
    // Every relayed call, failed ones included, ends in a usage line; this one never reached a worker,
    // and only workers read the vault.
    await svc.request('GET', '/health', { token: null });
    assert.equal(usageLine(reply.headers['x-service-request-id']!), undefined);
  });

  test('unknown, missing and wrongly shaped models', async () => {
    const cases: [string, unknown, number, string][] = [
      ['/v1/chat/completions', { messages: [] }, 400, 'INVALID_REQUEST'],
      ['/v1/chat/completions', { model: 42 }, 400, 'INVALID_REQUEST'],
      ['/v1/chat/completions', { model: 'openai/nope' }, 404, 'MODEL_NOT_FOUND'],
      ['/v1/chat/completions', { model: '@preset/none' }, 404, 'MODEL_NOT_FOUND'],
      ['/v1/chat/completions', [1], 400, 'INVALID_REQUEST'],
      ['/v1/chat/completions', '{"model":"openai/gpt-test"} x', 400, 'INVALID_JSON'],
    ];
    for (const [path, body, status, code] of cases) {
      const reply = await svc.request('POST', path, { body, headers: { 'content-type': 'application/json' } });
      assert.equal(reply.status, status, JSON.stringify(body));
      assert.equal(reply.json.error.code, code, JSON.stringify(body));
    }
    const edits = await svc.request('POST', '/v1/images/edits', { body: { model: 'openai/gpt-test' } });
    assert.equal(edits.status, 415);
    assert.equal(edits.json.error.code, 'UNSUPPORTED_MEDIA_TYPE');
    const form = new FormData();
    form.append('model', '@preset/x');
    form.append('file', new Blob([new Uint8Array(10)]), 'a.wav');
    const multipart = new Response(form);
    const preset = await svc.request('POST', '/v1/audio/transcriptions', {
      body: Buffer.from(await multipart.arrayBuffer()),
      headers: { 'content-type': multipart.headers.get('content-type')! },
    });
    assert.equal(preset.status, 400);
    assert.equal(preset.json.error.param, 'model');
    const unknown = await svc.request('GET', '/v1/responses/resp_never_seen');
    assert.equal(unknown.status, 404);
    assert.equal(unknown.json.error.code, 'NOT_FOUND');
  });

  test('a body over 64 KB (validated by a scan, not parsed) gets the same strict checks and resolution', async () => {
    // ~120 KB, escapes on every line
    const prompt = 'const s = "tab\\there";\n\tif (a < b) { return `é ✓ 😀`; }\n'.repeat(2000);
    const big = (text: string) => Buffer.from(text, 'utf8');
    const valid = JSON.stringify(chat(false, { messages: [{ role: 'user', content: prompt }] }));
    assert.ok(valid.length > 64 * 1024);
    const prose = JSON.stringify(
      chat(false, {
        messages: [{ role: 'user', content: `${'lorem ipsum '.repeat(6000)}MIDDLE ${'ipsum '.repeat(6000)}` }],
      }),
    );
    const before = oa.requests.length;
    const refused: [string, Buffer, number, string][] = [
      ['a raw newline inside a string', big(valid.replace('\\n', '\n')), 400, 'INVALID_JSON'],
      [
        'a raw newline deep in a long string',
        big(`${valid.slice(0, valid.lastIndexOf('\\n'))}\n${valid.slice(valid.lastIndexOf('\\n') + 2)}`),
        400,
        'INVALID_JSON',
      ],
      // Prose has no escapes: its bytes are checked 16 at a time (SIMD) rather than one by one.
      ['a control character in the middle of prose', big(prose.replace('MIDDLE', 'MID\u0001DLE')), 400, 'INVALID_JSON'],
      ['a bad escape', big(valid.replace('\\n\\t', '\\n\\q')), 400, 'INVALID_JSON'],
      ['a trailing value', big(`${valid} {}`), 400, 'INVALID_JSON'],
      ['a truncated body', big(valid.slice(0, -2)), 400, 'INVALID_JSON'],
      [
        'invalid UTF-8',
        Buffer.concat([big(valid.slice(0, -3)), Buffer.from([0xc3, 0x28]), big('"}')]),
        400,
        'INVALID_JSON',
      ],
      ['a top-level array', big(`[${valid}]`), 400, 'INVALID_REQUEST'],
      ['no model', big(valid.replace('"model"', '"mode1"')), 400, 'INVALID_REQUEST'],
      ['a model nested deeper only', big(`{"x":${valid}}`), 400, 'INVALID_REQUEST'],
      [
        'an unknown model, repeated key last',
        big(`${valid.slice(0, -1)},"model":"openai/nope"}`),
        404,
        'MODEL_NOT_FOUND',
      ],
    ];
    for (const [what, body, status, code] of refused) {
      const reply = await svc.request('POST', '/v1/chat/completions', {
        body,
        headers: { 'content-type': 'application/json' },
      });
      assert.equal(reply.status, status, what);
      assert.equal(reply.json.error.code, code, what);
    }
    assert.equal(oa.requests.length, before, 'nothing refused reached the upstream');

    // A model key written with an escape still resolves, and the upstream gets the client's value with only the model
    // changed.
    const escapedKey = valid.replace('"model"', '"mod\\u0065l"');
    const reply = await svc.request('POST', '/v1/chat/completions', {
      body: big(escapedKey),
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(reply.status, 200, reply.text);
    const sent = JSON.parse(oa.requests.at(-1)!.body) as Record<string, unknown>;
    assert.deepEqual(sent, { ...JSON.parse(valid), model: 'gpt-test' });
  });

  test('concurrent large bodies (shared arena slots, reused) each reach the upstream whole and unmixed', async () => {
    // Lanes of back-to-back requests, as agents send them: slots are freed and taken again while other
    // requests still hold theirs, which is when a slot given to two requests at once would show.
    const before = oa.requests.length;
    const sent = new Map<string, string>();
    const lane = async (l: number) => {
      for (let n = 0; n < 6; n++) {
        const marker = `l${l}-n${n}-`;
        const content = marker.repeat(Math.ceil((70_000 + ((l * 7 + n) % 16) * 15_000) / marker.length));
        sent.set(marker, content);
        const reply = await svc.request('POST', '/v1/chat/completions', {
          body: chat(false, { messages: [{ role: 'user', content }] }),
        });
        assert.equal(reply.status, 200, reply.text);
      }
    };
    await Promise.all(Array.from({ length: 16 }, (_, l) => lane(l)));
    const seen = oa.requests.slice(before);
    assert.equal(seen.length, sent.size);
    for (const request of seen) {
      const content = (JSON.parse(request.body) as { messages: { content: string }[] }).messages[0]!.content;
      const marker = content.slice(0, content.indexOf('-', content.indexOf('-') + 1) + 1);
      assert.equal(content, sent.get(marker), `the body of ${marker} arrived as sent`);
      sent.delete(marker);
    }
    assert.equal(sent.size, 0);
  });

  test('a disabled provider and a missing credential are refused with their codes', async () => {
    const record = await svc.request('POST', '/v1/catalog/models', {
      body: { providerId: 'openai', upstreamModelId: 'gpt-curated', families: ['styleA.chat_completions'] },
    });
    assert.equal(record.status, 201);
    await svc.request('PATCH', '/v1/providers/openai', { body: { enabled: false } });
    const disabled = await svc.request('POST', '/v1/chat/completions', {
      body: { ...chat(), model: 'openai/gpt-curated' },
    });
    assert.equal(disabled.status, 409);
    assert.equal(disabled.json.error.code, 'PROVIDER_DISABLED');
    // Auto-proxied models leave the catalog with their provider.
    assert.equal(
      (await svc.request('POST', '/v1/chat/completions', { body: chat() })).json.error.code,
      'MODEL_NOT_FOUND',
    );
    await svc.request('PATCH', '/v1/providers/openai', { body: { enabled: true, credential: null } });
    const missing = await svc.request('POST', '/v1/chat/completions', { body: chat() });
    assert.equal(missing.status, 409);
    assert.equal(missing.json.error.code, 'PROVIDER_CREDENTIAL_MISSING');
    await svc.request('PATCH', '/v1/providers/openai', { body: { credential: KEY } });
    // A new credential starts a model-list refresh in the background; wait for it (the action joins it), so
    // it cannot take a failure a later test arms on the fake.
    // (An earlier refresh, started without a credential, may still be running: the action joins it.)
    let refreshed = 0;
    for (let i = 0; i < 20 && refreshed !== 200; i++)
      refreshed = (await svc.request('POST', '/v1/providers/openai/actions/refresh-models')).status;
    assert.equal(refreshed, 200);
    assert.equal((await svc.request('POST', '/v1/chat/completions', { body: chat() })).status, 200);
  });
});

describe('upstream failures', () => {
  test('map to the envelope codes', async () => {
    const cases: [number, Record<string, string>, number, string][] = [
      [401, {}, 502, 'UPSTREAM_AUTH_FAILED'],
      [429, { 'retry-after': '7' }, 429, 'UPSTREAM_RATE_LIMITED'],
      [400, {}, 400, 'UPSTREAM_ERROR'],
      [404, {}, 404, 'UPSTREAM_ERROR'],
      [503, {}, 502, 'UPSTREAM_ERROR'],
    ];
    for (const [upstream, headers, status, code] of cases) {
      oa.failNext(
        upstream,
        { error: { message: `fake failure ${upstream} with ${KEY}`, type: 'invalid_request_error', code: 'x' } },
        headers,
      );
      const reply = await svc.request('POST', '/v1/chat/completions', { body: chat() });
      assert.equal(reply.status, status, `upstream ${upstream}: ${reply.text}`);
      assert.equal(reply.json.error.code, code, `upstream ${upstream}`);
      assert.equal(reply.json.error.details.upstreamStatus, upstream);
      assert.ok(!reply.text.includes(KEY), 'the credential echoed by the upstream is scrubbed');
      if (upstream === 429) assert.equal(reply.headers['retry-after'], '7');
    }
  });

  test('no response head within the provider head time-out is 504 UPSTREAM_TIMEOUT', async () => {
    await svc.request('PATCH', '/v1/providers/openai', { body: { timeouts: { headMs: 1000 } } });
    try {
      oa.hangNext();
      const reply = await svc.request('POST', '/v1/chat/completions', { body: chat() });
      assert.equal(reply.status, 504);
      assert.equal(reply.json.error.code, 'UPSTREAM_TIMEOUT');
    } finally {
      await svc.request('PATCH', '/v1/providers/openai', { body: { timeouts: { headMs: 600000 } } });
    }
  });

  test('an unreachable provider is UPSTREAM_UNREACHABLE', async () => {
    await svc.request('POST', '/v1/providers', {
      body: { kind: 'openai_compatible', id: 'gone', baseUrl: 'http://127.0.0.1:9/v1' },
    });
    await svc.request('POST', '/v1/catalog/models', {
      body: { providerId: 'gone', upstreamModelId: 'm', families: ['styleA.chat_completions'] },
    });
    const reply = await svc.request('POST', '/v1/chat/completions', { body: { ...chat(), model: 'gone/m' } });
    assert.equal(reply.status, 502);
    assert.equal(reply.json.error.code, 'UPSTREAM_UNREACHABLE');
  });
});

/** Streams a request over a raw socket; resolves with the received text once `stopWhen` holds or it ends. */
function rawStream(
  body: unknown,
  stopWhen?: (text: string) => boolean,
): Promise<{ text: string; status: number; destroy(): void; ended: Promise<void> }> {
  return new Promise((resolve, reject) => {
    const payload = JSON.stringify(body);
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port: svc.port,
        method: 'POST',
        path: '/v1/chat/completions',
        headers: { authorization: `Bearer ${svc.adminToken}`, 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        let settled = false;
        const ended = new Promise<void>((r) => res.on('close', () => r()));
        const result = () => ({ text, status: res.statusCode ?? 0, destroy: () => req.destroy(), ended });
        res.setEncoding('utf8');
        res.on('data', (d: string) => {
          text += d;
          if (!settled && stopWhen?.(text)) {
            settled = true;
            resolve(result());
          }
        });
        res.on('end', () => settled || resolve(result()));
        res.on('error', () => settled || resolve(result()));
      },
    );
    req.on('error', reject);
    req.end(payload);
  });
}

describe('streams', () => {
  test('a client that stops reading stops the upstream read; nothing is lost when it resumes', async () => {
    const events = 2000;
    oa.setOutput({ text: 'abcdefgh'.repeat(1250 * events), chunks: events });
    try {
      const upstream = oa.nextStream();
      const socket = connect(svc.port, '127.0.0.1');
      await new Promise<void>((r) => socket.on('connect', () => r()));
      socket.pause();
      const body = JSON.stringify(chat(true));
      socket.write(
        `POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${svc.adminToken}\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
      );
      const stream = await upstream;
      // 20 MB of events against a client that reads nothing: the relay must stop pulling from the upstream.
      let sent = -1;
      while (sent !== stream.eventsSent) {
        sent = stream.eventsSent;
        await new Promise((r) => setTimeout(r, 300));
      }
      assert.ok(
        stream.end === null && sent < events,
        `the upstream sent ${sent} of ${events} events while the client read nothing`,
      );
      let received = '';
      socket.setEncoding('utf8');
      socket.on('data', (d: string) => (received += d));
      socket.resume();
      await stream.ended;
      while (!received.includes('[DONE]')) await new Promise((r) => setTimeout(r, 20));
      socket.destroy();
      const content = [...received.matchAll(/"content":"([a-h]*)"/g)].map((m) => m[1]).join('');
      assert.equal(content.length, 8 * 1250 * events);
    } finally {
      oa.setOutput({ text: 'The quick brown fox jumps over the lazy dog, twice.', chunks: 20 });
    }
  });

  test('a client abort mid-stream closes the upstream connection within 1 s', async () => {
    oa.slowStreamNext({ chunkDelayMs: 100 });
    const upstream = oa.nextStream();
    const got = await rawStream(chat(true), (t) => t.split('data: ').length > 3);
    const abortedAt = performance.now();
    got.destroy();
    const end = await (await upstream).ended;
    assert.equal(end.by, 'client-closed');
    assert.ok(end.at - abortedAt < 1000, `upstream closed ${Math.round(end.at - abortedAt)} ms after the client`);
    const reqId = await svc.waitForLog((l) => l.msg === 'usage' && l.outcome === 'aborted');
    assert.equal(reqId.op, 'chat.completions');
  });

  test('non-ASCII text arrives intact, whole and streamed (chunks may split a character)', async () => {
    // Long enough that the stream crosses the worker's 16 KB string chunks, so the edge joins several.
    const text = 'Grüße aus Köln: 世界, 😀 and ✓ — '.repeat(600);
    oa.setOutput({ text, chunks: 97 });
    try {
      const plain = await svc.request('POST', '/v1/chat/completions', { body: chat() });
      assert.equal(plain.json.choices[0].message.content, text);
      const got = await rawStream(chat(true));
      const events = got.text.split('\n\n').filter((e) => e.startsWith('data: {'));
      const deltas = events.map(
        (e) =>
          (JSON.parse(e.slice(6)) as { choices: { delta: { content?: string } }[] }).choices[0]?.delta.content ?? '',
      );
      assert.equal(deltas.join(''), text);
    } finally {
      oa.setOutput({ ...openaiFake.DEFAULT_OUTPUT });
    }
  });

  test('a client that leaves before the answer is logged as 499, not as an internal error', async () => {
    oa.hangNext();
    const req = httpRequest({
      host: '127.0.0.1',
      port: svc.port,
      method: 'POST',
      path: '/v1/chat/completions',
      headers: { authorization: `Bearer ${svc.adminToken}`, 'content-type': 'application/json' },
    });
    req.on('error', () => {});
    req.end(JSON.stringify(chat()));
    await new Promise((r) => setTimeout(r, 300)); // the call is upstream, waiting for a head that never comes
    req.destroy();
    const line = await svc.waitForLog((l) => l.msg === 'request' && l.status === 499);
    const usage = await svc.waitForLog((l) => l.msg === 'usage' && l.reqId === line.reqId);
    assert.equal(usage.outcome, 'aborted');
    assert.equal(svc.logLines().filter((l) => l.msg === 'internal error').length, 0);
  });

  test('an upstream killed mid-stream ends the client stream with an error event', async () => {
    oa.failMidStreamNext({ afterChunks: 3 });
    const got = await rawStream(chat(true));
    assert.equal(got.status, 200);
    const events = got.text.trim().split(/\n\n/);
    assert.ok(events.length >= 4, got.text);
    const last = events.at(-1)!;
    assert.match(last, /^event: error\ndata: /);
    const envelope = JSON.parse(last.slice(last.indexOf('data: ') + 6));
    assert.equal(envelope.type, 'error');
    assert.match(envelope.error.code, /^UPSTREAM_/);
    assert.equal(envelope.request_id.length, 30);
    const usage = await svc.waitForLog((l) => l.msg === 'usage' && l.outcome === 'failed');
    assert.equal(usage.op, 'chat.completions');
  });
});
