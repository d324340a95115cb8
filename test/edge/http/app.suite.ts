import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Writable } from 'node:stream';
import { Type } from '@sinclair/typebox';
import { pino } from 'pino';
import { createApp } from '../../../edge/http/app.ts';
import { corsPolicy } from '../../../edge/http/cors.ts';
import { route } from '../../../edge/http/router.ts';
import type { AuthResult } from '../../../control/token-service.ts';
import type { EdgeResponse } from '../../../edge/http/types.ts';
import { compile } from '../../../protocol/validate.ts';

const TOKEN = 'sk-svc-' + 'T'.repeat(43);
const OTHER_TOKEN = 'sk-svc-' + 'O'.repeat(43);
const ALLOWED = 'https://app.example';
const BODY_LIMIT = 64;

const checkThing = compile(Type.Object({ name: Type.String({ minLength: 1 }) }, { additionalProperties: false }));

const routes = [
  route({ method: 'GET', path: '/health', scope: 'public', handle: () => ({ body: { status: 'ok' } }) }),
  route({
    method: 'GET',
    path: '/v1/things/:id',
    scope: 'inference',
    handle: ({ params, principal }) => ({ body: { id: params['id'], tokenId: principal?.tokenId } }),
  }),
  route({
    method: 'POST',
    path: '/v1/things',
    scope: 'inference',
    body: checkThing,
    handle: ({ body }) => ({ status: 201, body: { created: body.name } }),
  }),
  route({ method: 'GET', path: '/v1/admin', scope: 'manage', handle: () => ({ body: { secret: 'admin-only' } }) }),
  route({
    method: 'GET',
    path: '/v1/boom',
    scope: 'inference',
    handle: () => {
      throw new Error('boom /secret/path');
    },
  }),
];

function authenticate(secret: string): AuthResult {
  return secret === TOKEN
    ? { ok: true, principal: { tokenId: 'tok_1', scopes: ['inference'], serviceAccountId: null } }
    : { ok: false, reason: 'unknown' };
}

function harness(networkExposed = false) {
  const raw: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, done) {
      raw.push(
        ...chunk
          .toString('utf8')
          .split('\n')
          .filter((l) => l !== ''),
      );
      done();
    },
  });
  const app = createApp({
    routes,
    log: pino({ level: 'info' }, stream),
    authenticate,
    cors: () => corsPolicy([ALLOWED]),
    multipartBodyLimit: () => 64 * 1024 * 1024,
    jsonBodyLimit: () => BODY_LIMIT,
    listener: { host: '127.0.0.1', networkExposed },
    isDraining: () => false,
  });
  const call = async (req: {
    method?: string;
    path: string;
    query?: string;
    headers?: Record<string, string>;
    body?: string | Buffer | null;
  }) => {
    const before = raw.length;
    const body = req.body === undefined || req.body === null ? null : Buffer.from(req.body);
    const res: EdgeResponse = await app.handle({
      method: req.method ?? 'GET',
      path: req.path,
      query: req.query ?? '',
      headers: { host: 'localhost:3939', ...req.headers },
      body,
    });
    // The request line is written once the turn's answers are out (edge/after-answers.ts).
    await new Promise((resolve) => setImmediate(resolve));
    const text = res.body.toString();
    const logs = raw.slice(before).map((l) => JSON.parse(l) as Record<string, unknown>);
    return {
      status: res.status,
      headers: res.headers,
      text,
      json: text === '' ? undefined : JSON.parse(text),
      logs,
      raw: raw.slice(before),
    };
  };
  return { call };
}

type Result = Awaited<ReturnType<ReturnType<typeof harness>['call']>>;
const bearer = { authorization: `Bearer ${TOKEN}` };

function requestIdOf(res: Result): string {
  const id = res.headers['x-service-request-id'];
  assert.match(id ?? '', /^req_[0-9A-HJKMNP-TV-Z]{26}$/);
  assert.equal(res.headers['x-request-id'], id);
  assert.equal(res.headers['request-id'], id);
  return id!;
}

function assertError(res: Result, status: number, code: string): void {
  assert.equal(res.status, status, res.text);
  assert.equal(res.headers['content-type'], 'application/json');
  assert.equal(res.json.type, 'error');
  assert.equal(res.json.error.code, code);
  assert.equal(res.json.request_id, requestIdOf(res));
}

function requestLine(res: Result): Record<string, unknown> {
  const lines = res.logs.filter((l) => l['msg'] === 'request');
  assert.equal(lines.length, 1, JSON.stringify(res.logs));
  return lines[0]!;
}

describe('createApp request IDs', () => {
  const { call } = harness();

  it('sets three equal headers on success, fresh per request, ignoring an inbound X-Request-Id', async () => {
    const a = await call({ path: '/v1/things/x1', headers: { ...bearer, 'x-request-id': 'req_client' } });
    assert.equal(a.status, 200);
    assert.deepEqual(a.json, { id: 'x1', tokenId: 'tok_1' });
    const b = await call({ path: '/health' });
    assert.notEqual(requestIdOf(a), 'req_client');
    assert.notEqual(requestIdOf(a), requestIdOf(b));
  });

  it('sets them on 401, 404 and 405 and repeats them in the envelope', async () => {
    assertError(await call({ path: '/v1/things/x1' }), 401, 'UNAUTHORIZED');
    assertError(await call({ path: '/nope' }), 404, 'NOT_FOUND');
    const notAllowed = await call({ method: 'DELETE', path: '/v1/things/x1', headers: bearer });
    assertError(notAllowed, 405, 'METHOD_NOT_ALLOWED');
    assert.equal(notAllowed.headers['allow'], 'GET, HEAD');
  });

  it('answers HEAD as GET without the body, and asks the same token', async () => {
    const get = await call({ path: '/v1/things/x1', headers: bearer });
    const head = await call({ method: 'HEAD', path: '/v1/things/x1', headers: bearer });
    assert.equal(head.status, 200);
    assert.equal(head.text, '');
    assert.equal(head.headers['content-type'], get.headers['content-type']);
    const refused = await call({ method: 'HEAD', path: '/v1/things/x1' });
    assert.deepEqual([refused.status, refused.text], [401, '']);
  });

  it('sets them on a preflight 204', async () => {
    const res = await call({
      method: 'OPTIONS',
      path: '/v1/things',
      headers: { origin: ALLOWED, 'access-control-request-method': 'POST' },
    });
    assert.equal(res.status, 204);
    assert.equal(res.text, '');
    requestIdOf(res);
  });
});

describe('createApp errors', () => {
  it('turns an unknown throw into a generic 500 and logs the cause under the request ID', async () => {
    const { call } = harness();
    const res = await call({ path: '/v1/boom', headers: bearer });
    assertError(res, 500, 'INTERNAL');
    assert.ok(!res.text.includes('boom') && !res.text.includes('/secret/path'), res.text);
    const id = requestIdOf(res);
    const cause = res.logs.find((l) => l['msg'] === 'internal error');
    assert.equal(cause?.['reqId'], id);
    assert.match(JSON.stringify(cause?.['err']), /boom \/secret\/path/);
    assert.equal(requestLine(res)['reqId'], id);
  });

  it('validates the body: bad JSON, unknown field, wrong type, wrong content type', async () => {
    const { call } = harness();
    const post = (body: string, ct = 'application/json') =>
      call({ method: 'POST', path: '/v1/things', headers: { ...bearer, 'content-type': ct }, body });
    const ok = await post('{"name":"n"}');
    assert.equal(ok.status, 201);
    assert.deepEqual(ok.json, { created: 'n' });
    assertError(await post('{"name":"n"}{}'), 400, 'INVALID_JSON');
    const unknown = await post('{"name":"n","x":1}');
    assertError(unknown, 400, 'INVALID_JSON');
    assert.equal(unknown.json.error.param, 'x');
    const wrong = await post('{"name":5}');
    assertError(wrong, 400, 'INVALID_REQUEST');
    assert.equal(wrong.json.error.param, 'name');
    assertError(await post('{"name":"n"}', 'text/plain'), 400, 'INVALID_JSON');
    assertError(await call({ method: 'POST', path: '/v1/things', headers: bearer }), 400, 'INVALID_JSON');
  });

  it('refuses a body over jsonBodyLimit with 413 before parsing it', async () => {
    const { call } = harness();
    const body = JSON.stringify({ name: 'x'.repeat(BODY_LIMIT) });
    const res = await call({
      method: 'POST',
      path: '/v1/things',
      headers: { ...bearer, 'content-type': 'application/json' },
      body,
    });
    assertError(res, 413, 'PAYLOAD_TOO_LARGE');
    assert.equal(res.json.error.details.limitBytes, BODY_LIMIT);
    assert.equal(requestLine(res)['status'], 413);
  });

  it('answers a malformed percent-encoding with 400', async () => {
    const { call } = harness();
    assertError(await call({ path: '/v1/things/%E0%A4%A', headers: bearer }), 400, 'INVALID_REQUEST');
  });
});

describe('createApp authentication', () => {
  const { call } = harness();

  it('refuses /v1 routes without a valid token, including unknown /v1 paths', async () => {
    assertError(await call({ path: '/v1/things/x' }), 401, 'UNAUTHORIZED');
    assertError(
      await call({ path: '/v1/things/x', headers: { authorization: `Bearer ${OTHER_TOKEN}` } }),
      401,
      'UNAUTHORIZED',
    );
    assertError(
      await call({ path: '/v1/things/x', headers: { authorization: 'Basic dXNlcjpwYXNz' } }),
      401,
      'UNAUTHORIZED',
    );
    assertError(await call({ path: '/v1/nothing-here' }), 401, 'UNAUTHORIZED');
    assertError(await call({ path: '/v1/nothing-here', headers: bearer }), 404, 'NOT_FOUND');
  });

  it('accepts every token carrier', async () => {
    const carriers: Record<string, string>[] = [bearer, { 'x-service-token': TOKEN }, { 'x-api-key': TOKEN }];
    for (const headers of carriers) {
      assert.equal((await call({ path: '/v1/things/a', headers })).status, 200);
    }
  });

  it('answers public routes without a token', async () => {
    const res = await call({ path: '/health' });
    assert.equal(res.status, 200);
    assert.deepEqual(res.json, { status: 'ok' });
  });

  it('refuses a missing scope with 403 FORBIDDEN naming it', async () => {
    const res = await call({ path: '/v1/admin', headers: bearer });
    assertError(res, 403, 'FORBIDDEN');
    assert.equal(res.json.error.details.requiredScope, 'manage');
    assert.ok(!res.text.includes('admin-only'));
  });

  it('never writes the token to the log', async () => {
    const results = [
      await call({ path: '/v1/things/a', headers: bearer }),
      await call({ path: '/v1/boom', headers: { 'x-api-key': TOKEN } }),
      await call({ path: '/v1/admin', headers: { 'x-service-token': TOKEN } }),
      await call({ path: '/v1/things/a', headers: { authorization: `Bearer ${OTHER_TOKEN}` } }),
    ];
    for (const res of results) {
      assert.ok(res.raw.length >= 1);
      for (const line of res.raw) {
        assert.ok(!line.includes(TOKEN) && !line.includes(OTHER_TOKEN), line);
        assert.ok(!line.includes('T'.repeat(43)) && !line.includes('O'.repeat(43)), line);
      }
    }
  });
});

describe('createApp Host check', () => {
  it('refuses a foreign Host while local-only', async () => {
    const { call } = harness(false);
    assertError(await call({ path: '/health', headers: { host: 'evil.example' } }), 403, 'FORBIDDEN');
    assertError(
      await call({ path: '/v1/things/a', headers: { ...bearer, host: 'evil.example:3939' } }),
      403,
      'FORBIDDEN',
    );
    assert.equal((await call({ path: '/health', headers: { host: '127.0.0.1:3939' } })).status, 200);
  });

  it('accepts any Host when network-exposed', async () => {
    const { call } = harness(true);
    assert.equal((await call({ path: '/health', headers: { host: 'evil.example' } })).status, 200);
    assert.equal((await call({ path: '/v1/things/a', headers: { ...bearer, host: 'evil.example' } })).status, 200);
  });
});

describe('createApp CORS', () => {
  const { call } = harness();
  const preflight = (origin: string) =>
    call({
      method: 'OPTIONS',
      path: '/v1/things',
      headers: {
        origin,
        'access-control-request-method': 'POST',
        'access-control-request-headers': 'authorization, content-type',
      },
    });

  it('answers a preflight from an allowed origin with 204 and no token', async () => {
    const res = await preflight(ALLOWED);
    assert.equal(res.status, 204);
    assert.equal(res.headers['access-control-allow-origin'], ALLOWED);
    assert.equal(res.headers['access-control-allow-headers'], 'authorization, content-type');
    assert.match(res.headers['access-control-allow-methods'] ?? '', /POST/);
    assert.equal(requestLine(res)['route'], 'preflight');
  });

  it('refuses a preflight from another origin without CORS headers', async () => {
    const res = await preflight('https://evil.example');
    assertError(res, 403, 'FORBIDDEN');
    assert.deepEqual(
      Object.keys(res.headers).filter((h) => h.startsWith('access-control-')),
      [],
    );
  });

  it('adds CORS headers to real responses for an allowed origin only', async () => {
    const allowed = await call({ path: '/v1/things/a', headers: { ...bearer, origin: ALLOWED } });
    assert.equal(allowed.status, 200);
    assert.equal(allowed.headers['access-control-allow-origin'], ALLOWED);
    assert.match(allowed.headers['access-control-expose-headers'] ?? '', /x-service-request-id/);
    const denied401 = await call({ path: '/v1/things/a', headers: { origin: ALLOWED } });
    assert.equal(denied401.headers['access-control-allow-origin'], ALLOWED);
    const other = await call({ path: '/v1/things/a', headers: { ...bearer, origin: 'https://evil.example' } });
    assert.equal(other.status, 200);
    assert.deepEqual(
      Object.keys(other.headers).filter((h) => h.startsWith('access-control-')),
      [],
    );
  });
});

describe('createApp request log', () => {
  it('writes exactly one line per request with reqId, method, route, status and durationMs', async () => {
    const { call } = harness();
    const cases = [
      { req: { path: '/v1/things/a', headers: bearer }, route: 'GET /v1/things/:id', status: 200 },
      { req: { path: '/health' }, route: 'GET /health', status: 200 },
      { req: { path: '/v1/things/a' }, route: 'GET /v1/things/:id', status: 401 },
      { req: { path: '/nope' }, route: 'unmatched', status: 404 },
      { req: { method: 'PUT', path: '/v1/things', headers: bearer }, route: 'unmatched', status: 405 },
      {
        req: { method: 'POST', path: '/v1/things', headers: bearer, body: '{"name":"n"}' },
        route: 'POST /v1/things',
        status: 201,
      },
    ];
    for (const c of cases) {
      const res = await call(c.req);
      assert.equal(res.status, c.status);
      assert.equal(res.logs.length, 1, JSON.stringify(res.logs));
      const line = requestLine(res);
      assert.equal(line['reqId'], requestIdOf(res));
      assert.equal(line['method'], c.req.method ?? 'GET');
      assert.equal(line['route'], c.route);
      assert.equal(line['status'], c.status);
      assert.equal(typeof line['durationMs'], 'number');
      assert.ok((line['durationMs'] as number) >= 0);
      assert.equal(line['level'], 30);
    }
  });
});
