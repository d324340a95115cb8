import assert from 'node:assert/strict';
import { connect } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { Reply } from '../helpers/service.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

let svc: InProcessService;
before(async () => {
  svc = await startInProcess();
});
after(async () => {
  await svc.stop();
});

function assertRequestIds(reply: Reply): string {
  const id = reply.headers['x-service-request-id'];
  assert.match(id ?? '', /^req_[0-9A-HJKMNP-TV-Z]{26}$/);
  assert.equal(reply.headers['x-request-id'], id);
  assert.equal(reply.headers['request-id'], id);
  if (reply.json?.type === 'error') assert.equal(reply.json.request_id, id);
  return id!;
}

function assertEnvelope(reply: Reply, status: number, code: string): void {
  assert.equal(reply.status, status, reply.text);
  assert.equal(reply.json.type, 'error');
  assert.equal(reply.json.error.code, code);
  assert.equal(reply.json.error.messageKey, `errors.${code.toLowerCase()}`);
  assert.equal(typeof reply.json.error.message, 'string');
  assert.equal(typeof reply.json.error.type, 'string');
  assert.ok('param' in reply.json.error);
  assert.equal(typeof reply.json.error.details, 'object');
  assertRequestIds(reply);
}

describe('request IDs (global rule 2)', () => {
  test('every kind of response carries three equal, fresh IDs', async () => {
    const replies = [
      await svc.request('GET', '/health', { token: null }),
      await svc.request('GET', '/nope', { token: null }),
      await svc.request('GET', '/v1/settings', { token: null }),
      await svc.request('PUT', '/v1/settings'),
      await svc.request('OPTIONS', '/v1/settings', {
        token: null,
        headers: { origin: 'http://evil.example', 'access-control-request-method': 'GET' },
      }),
    ];
    const ids = replies.map(assertRequestIds);
    assert.equal(new Set(ids).size, ids.length);
  });

  test('an inbound X-Request-Id is not adopted as ours', async () => {
    const reply = await svc.request('GET', '/health', { token: null, headers: { 'x-request-id': 'req_attacker' } });
    assert.notEqual(assertRequestIds(reply), 'req_attacker');
  });

  test('IDs sort by time', async () => {
    const a = assertRequestIds(await svc.request('GET', '/health', { token: null }));
    await new Promise((r) => setTimeout(r, 5));
    const b = assertRequestIds(await svc.request('GET', '/health', { token: null }));
    assert.ok(a < b);
  });
});

describe('routing errors', () => {
  test('unknown route is 404 NOT_FOUND, wrong method 405 with Allow', async () => {
    assertEnvelope(await svc.request('GET', '/v1/nothing-here'), 404, 'NOT_FOUND');
    assertEnvelope(await svc.request('GET', '/nope', { token: null }), 404, 'NOT_FOUND');
    const wrong = await svc.request('DELETE', '/v1/settings');
    assertEnvelope(wrong, 405, 'METHOD_NOT_ALLOWED');
    assert.equal(wrong.headers['allow'], 'GET, HEAD, PATCH');
  });
});

describe('strict JSON (global rule 1)', () => {
  const bad: [string, string | Buffer][] = [
    ['malformed', '{"cors":'],
    ['empty', ''],
    ['two values', '{}{}'],
    ['trailing garbage', '{} x'],
    ['trailing array', '{"usage":{}} []'],
    ['not UTF-8', Buffer.from([0x7b, 0xff, 0x7d])],
  ];
  for (const [name, body] of bad) {
    test(`${name} body is 400 INVALID_JSON`, async () => {
      const reply = await svc.request('PATCH', '/v1/settings', {
        body,
        headers: { 'content-type': 'application/json' },
      });
      assertEnvelope(reply, 400, 'INVALID_JSON');
    });
  }

  test('unknown field on a typed write is INVALID_JSON naming it', async () => {
    const reply = await svc.request('PATCH', '/v1/settings', { body: { bind: { host: '0.0.0.0', port: 80 } } });
    assertEnvelope(reply, 400, 'INVALID_JSON');
    assert.equal(reply.json.error.param, 'bind.host');
  });

  test('a wrong content type is INVALID_JSON', async () => {
    const reply = await svc.request('PATCH', '/v1/settings', {
      body: '{}',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    assertEnvelope(reply, 400, 'INVALID_JSON');
  });

  test('prototype-poisoning keys are harmless', async () => {
    const reply = await svc.request('PATCH', '/v1/settings', {
      body: '{"__proto__":{"usage":{"enabled":false}},"gauge":{"__proto__":{"enabled":true}}}',
      headers: { 'content-type': 'application/json' },
    });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.json.usage.enabled, true);
    assert.equal(reply.json.gauge.enabled, false);
    const after = await svc.request('GET', '/v1/settings');
    assert.equal(after.json.usage.enabled, true);
  });

  test('a body over the limit is 413 PAYLOAD_TOO_LARGE', async () => {
    const set = await svc.request('PATCH', '/v1/settings', { body: { limits: { jsonBodyBytes: 65536 } } });
    assert.equal(set.status, 200);
    try {
      const big = JSON.stringify({
        cors: { allowedOrigins: Array.from({ length: 4000 }, (_, i) => `http://h${i}.example`) },
      });
      assert.ok(big.length > 65536);
      const reply = await svc.request('PATCH', '/v1/settings', {
        body: big,
        headers: { 'content-type': 'application/json' },
      });
      assertEnvelope(reply, 413, 'PAYLOAD_TOO_LARGE');
    } finally {
      await svc.request('PATCH', '/v1/settings', { body: { limits: { jsonBodyBytes: 16 * 1024 * 1024 } } });
    }
  });

  test('a chunked body is refused while it streams in, before it ends', async () => {
    await svc.request('PATCH', '/v1/settings', { body: { limits: { jsonBodyBytes: 65536 } } });
    try {
      // Send a chunked body that never ends: the answer must come once the limit is crossed.
      const answer = await new Promise<string>((resolve, reject) => {
        const socket = connect(svc.port, '127.0.0.1');
        let received = '';
        socket.on('data', (d) => {
          received += d.toString();
          if (received.includes('\r\n\r\n') && received.includes('PAYLOAD_TOO_LARGE')) {
            socket.destroy();
            resolve(received);
          }
        });
        socket.on('error', reject);
        socket.write(
          `PATCH /v1/settings HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${svc.adminToken}\r\n` +
            'Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n',
        );
        const chunk = 'x'.repeat(16384);
        for (let i = 0; i < 8; i++) socket.write(`${chunk.length.toString(16)}\r\n${chunk}\r\n`);
        setTimeout(() => reject(new Error(`no answer: ${received}`)), 5000).unref();
      });
      assert.match(answer, /^HTTP\/1\.1 413/);
    } finally {
      await svc.request('PATCH', '/v1/settings', { body: { limits: { jsonBodyBytes: 16 * 1024 * 1024 } } });
    }
  });
});

describe('DNS-rebinding guard', () => {
  test('a foreign Host header is refused while local-only', async () => {
    for (const host of ['evil.example', 'evil.example:3939', `127.0.0.1.nip.example:${1}`]) {
      const reply = await svc.request('GET', '/health', { token: null, headers: { host } });
      assertEnvelope(reply, 403, 'FORBIDDEN');
    }
    const authed = await svc.request('GET', '/v1/settings', { headers: { host: 'attacker.example' } });
    assertEnvelope(authed, 403, 'FORBIDDEN');
  });

  test('loopback names are accepted', async () => {
    for (const host of ['localhost', `localhost:${svc.port}`, `127.0.0.1:${svc.port}`, `[::1]:${svc.port}`]) {
      const reply = await svc.request('GET', '/health', { token: null, headers: { host } });
      assert.equal(reply.status, 200, host);
    }
  });
});

describe('CORS (section 5 rule 6)', () => {
  const preflight = (origin: string) =>
    svc.request('OPTIONS', '/v1/settings', {
      token: null,
      headers: {
        origin,
        'access-control-request-method': 'PATCH',
        'access-control-request-headers': 'authorization, content-type',
      },
    });

  test('off by default: no CORS headers, preflight refused', async () => {
    const reply = await svc.request('GET', '/v1/settings', { headers: { origin: 'http://app.example' } });
    assert.equal(reply.status, 200);
    assert.equal(reply.headers['access-control-allow-origin'], undefined);
    const pre = await preflight('http://app.example');
    assert.equal(pre.status, 403);
    assert.equal(pre.headers['access-control-allow-origin'], undefined);
  });

  test('an allowed origin applies at once; preflight needs no token; real requests still do', async () => {
    const set = await svc.request('PATCH', '/v1/settings', {
      body: { cors: { allowedOrigins: ['http://app.example'] } },
    });
    assert.equal(set.status, 200);
    const pre = await preflight('http://app.example');
    assert.equal(pre.status, 204);
    assert.equal(pre.headers['access-control-allow-origin'], 'http://app.example');
    assert.match(pre.headers['access-control-allow-methods'] ?? '', /PATCH/);
    assert.equal(pre.headers['access-control-allow-headers'], 'authorization, content-type');
    assertRequestIds(pre);

    const noToken = await svc.request('GET', '/v1/settings', {
      token: null,
      headers: { origin: 'http://app.example' },
    });
    assert.equal(noToken.status, 401);
    assert.equal(noToken.headers['access-control-allow-origin'], 'http://app.example', 'the browser can read the 401');
    const withToken = await svc.request('GET', '/v1/settings', { headers: { origin: 'http://app.example' } });
    assert.equal(withToken.headers['access-control-allow-origin'], 'http://app.example');
    assert.match(withToken.headers['access-control-expose-headers'] ?? '', /x-service-request-id/);

    const other = await svc.request('GET', '/v1/settings', { headers: { origin: 'http://other.example' } });
    assert.equal(other.headers['access-control-allow-origin'], undefined);
    assert.equal((await preflight('http://other.example')).status, 403);
  });

  test('a wildcard works and is logged as discouraged; an empty list disables browsers', async () => {
    await svc.request('PATCH', '/v1/settings', { body: { cors: { allowedOrigins: ['*'] } } });
    const pre = await preflight('http://anything.example');
    assert.equal(pre.status, 204);
    assert.equal(pre.headers['access-control-allow-origin'], 'http://anything.example');
    await svc.waitForLog((l) => l.level === 40 && String(l.msg).includes('"*"'));
    const view = await svc.request('GET', '/v1/settings');
    assert.equal(view.json.cors.wildcard, true);

    await svc.request('PATCH', '/v1/settings', { body: { cors: { allowedOrigins: [] } } });
    assert.equal((await preflight('http://anything.example')).status, 403);
  });
});

describe('start-up log', () => {
  test('names the edge that serves, as /health does: the native uWS build, or node:http with the reason', async () => {
    const { edge } = (await svc.request('GET', '/health')).json as { edge: string };
    const line = await svc.waitForLog((l) => l.edge === edge);
    if (edge === 'uWebSockets.js') assert.match(String(line.build), /^@?(btc-vision\/uwebsockets\.js|uws-pack)@\d/);
    else {
      assert.equal(edge, 'node:http');
      // Forced (SWITCHYARD_EDGE=node, info), a native build passed over (info, naming it), or none loads here
      // (warn, with why).
      if (process.env.SWITCHYARD_EDGE !== 'node' && line.passedOver !== undefined) {
        assert.equal(line.level, 30);
        assert.match(String(line.passedOver), /^uws-pack@\d/);
        assert.match(String(line.msg), /leaves requests without Host or with folded header lines unanswered/);
      } else if (process.env.SWITCHYARD_EDGE !== 'node') {
        assert.equal(line.level, 40);
        assert.ok(Array.isArray(line.failures) && line.failures.length === 2, JSON.stringify(line));
      }
    }
  });
});

describe('request log (one line per request)', () => {
  test('holds method, route, status, duration and request ID', async () => {
    const reply = await svc.request('GET', '/v1/tokens/tok_unknown');
    const id = assertRequestIds(reply);
    await svc.waitForLog((l) => l.reqId === id);
    const lines = svc.logLines().filter((l) => l.reqId === id);
    assert.equal(lines.length, 1);
    assert.equal(lines[0]!.method, 'GET');
    assert.equal(lines[0]!.route, 'GET /v1/tokens/:id');
    assert.equal(lines[0]!.status, 404);
    assert.equal(typeof lines[0]!.durationMs, 'number');
  });
});
