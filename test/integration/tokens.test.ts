import assert from 'node:assert/strict';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startService, type TestService } from '../helpers/service.ts';

let svc: TestService;
before(async () => {
  svc = await startService();
});
after(async () => {
  await svc.stop();
});

async function createToken(body: Record<string, unknown>) {
  const reply = await svc.request('POST', '/v1/tokens', { body });
  svc.markSecretBearing(reply);
  assert.equal(reply.status, 201, reply.text);
  return reply.json as { token: { id: string; scopes: string[]; prefix: string }; secret: string };
}

describe('bootstrap token', () => {
  test('is written to <home>/token with mode 0600 and is an admin token', async () => {
    assert.match(svc.adminToken, /^sk-svc-[A-Za-z0-9_-]{43}$/);
    assert.equal(statSync(join(svc.home, 'token')).mode & 0o777, 0o600);
    assert.equal(statSync(svc.home).mode & 0o777, 0o700);
    const list = await svc.request('GET', '/v1/tokens');
    assert.equal(list.status, 200);
    assert.deepEqual(
      list.json.data.map((t: { scopes: string[] }) => t.scopes),
      [['admin']],
    );
  });

  test('is printed once to the terminal, never to the log', async () => {
    await svc.waitForStderr(new RegExp(svc.adminToken));
    assert.ok(!svc.log().includes(svc.adminToken));
  });
});

describe('token carriers (docs/api.md, Conventions)', () => {
  for (const [name, headers] of [
    ['Authorization: Bearer', (t: string) => ({ authorization: `Bearer ${t}` })],
    ['X-Service-Token', (t: string) => ({ 'x-service-token': t })],
    ['x-api-key', (t: string) => ({ 'x-api-key': t })],
  ] as const) {
    test(`${name} authenticates`, async () => {
      const reply = await svc.request('GET', '/v1/settings', { token: null, headers: headers(svc.adminToken) });
      assert.equal(reply.status, 200);
    });
    test(`${name} with a wrong token is 401 UNAUTHORIZED`, async () => {
      const bad = 'sk-svc-' + 'A'.repeat(43);
      const reply = await svc.request('GET', '/v1/settings', { token: null, headers: headers(bad) });
      assert.equal(reply.status, 401);
      assert.equal(reply.json.error.code, 'UNAUTHORIZED');
      assert.equal(reply.json.error.messageKey, 'errors.unauthorized');
    });
  }

  test('no token on a /v1 route, known or not, is 401', async () => {
    for (const path of ['/v1/settings', '/v1/tokens', '/v1/audit-events', '/v1/does-not-exist']) {
      const reply = await svc.request('GET', path, { token: null });
      assert.equal(reply.status, 401, path);
      assert.equal(reply.json.error.code, 'UNAUTHORIZED');
    }
  });

  test('/health and /version need no token', async () => {
    const health = await svc.request('GET', '/health', { token: null });
    assert.equal(health.status, 200);
    assert.equal(health.json.status, 'ok');
    const version = await svc.request('GET', '/version', { token: null });
    assert.equal(version.status, 200);
    assert.equal(version.json.name, 'switchyard');
    assert.equal(typeof version.json.version, 'string');
    assert.ok(!version.text.includes(svc.home), 'no paths in /version');
  });
});

describe('/v1/tokens', () => {
  test('create shows the secret once; list and get never show it', async () => {
    const created = await createToken({ name: 'agent fleet' });
    assert.match(created.secret, /^sk-svc-[A-Za-z0-9_-]{43}$/);
    assert.deepEqual(created.token.scopes, ['inference'], 'least privilege by default');
    assert.ok(created.secret.startsWith(created.token.prefix));
    const list = await svc.request('GET', '/v1/tokens');
    assert.ok(!list.text.includes(created.secret));
    assert.ok(!list.text.includes(created.secret.slice(12)));
    const one = await svc.request('GET', `/v1/tokens/${created.token.id}`);
    assert.equal(one.status, 200);
    assert.deepEqual(Object.keys(one.json).sort(), [
      'createdAt',
      'expiresAt',
      'id',
      'lastUsedAt',
      'name',
      'prefix',
      'scopes',
      'serviceAccountId',
    ]);
  });

  test('scopes are enforced with 403 FORBIDDEN', async () => {
    const reader = await createToken({ name: 'dashboard', scopes: ['read'] });
    const inference = await createToken({ name: 'agent', scopes: ['inference'] });
    const manager = await createToken({ name: 'ops', scopes: ['manage'] });

    assert.equal((await svc.request('GET', '/v1/settings', { token: reader.secret })).status, 200);
    assert.equal((await svc.request('GET', '/v1/audit-events', { token: reader.secret })).status, 200);
    const patchByReader = await svc.request('PATCH', '/v1/settings', { token: reader.secret, body: {} });
    assert.equal(patchByReader.status, 403);
    assert.equal(patchByReader.json.error.code, 'FORBIDDEN');
    assert.equal(patchByReader.json.error.details.requiredScope, 'manage');

    assert.equal((await svc.request('GET', '/v1/settings', { token: inference.secret })).status, 403);
    assert.equal((await svc.request('PATCH', '/v1/settings', { token: manager.secret, body: {} })).status, 200);
    // Tokens are admin-only: a manage token cannot mint itself more power.
    const escalate = await svc.request('POST', '/v1/tokens', {
      token: manager.secret,
      body: { name: 'x', scopes: ['admin'] },
    });
    assert.equal(escalate.status, 403);
    assert.equal((await svc.request('GET', '/v1/tokens', { token: reader.secret })).status, 403);
  });

  test('PATCH changes name and scopes; the change applies on the next request', async () => {
    const t = await createToken({ name: 'temp', scopes: ['read'] });
    const patched = await svc.request('PATCH', `/v1/tokens/${t.token.id}`, {
      body: { name: 'renamed', scopes: ['read', 'manage'] },
    });
    assert.equal(patched.status, 200);
    assert.equal(patched.json.name, 'renamed');
    assert.equal((await svc.request('PATCH', '/v1/settings', { token: t.secret, body: {} })).status, 200);
  });

  test('DELETE revokes at once', async () => {
    const t = await createToken({ name: 'short-lived', scopes: ['read'] });
    assert.equal((await svc.request('GET', '/v1/settings', { token: t.secret })).status, 200);
    const del = await svc.request('DELETE', `/v1/tokens/${t.token.id}`);
    assert.equal(del.status, 200);
    assert.deepEqual(del.json, { id: t.token.id, deleted: true });
    assert.equal((await svc.request('GET', '/v1/settings', { token: t.secret })).status, 401);
    assert.equal((await svc.request('GET', `/v1/tokens/${t.token.id}`)).status, 404);
    assert.equal((await svc.request('DELETE', `/v1/tokens/${t.token.id}`)).json.error.code, 'NOT_FOUND');
  });

  test('an expired token is refused; expiresAt must be a future RFC 3339 date-time', async () => {
    const past = await svc.request('POST', '/v1/tokens', { body: { name: 'x', expiresAt: '2020-01-01T00:00:00Z' } });
    assert.equal(past.status, 400);
    assert.equal(past.json.error.param, 'expiresAt');
    const garbage = await svc.request('POST', '/v1/tokens', { body: { name: 'x', expiresAt: 'tomorrow' } });
    assert.equal(garbage.json.error.code, 'INVALID_REQUEST');
    // Room for a slow machine to create the token and use it before it expires; then a wait until just after.
    const soon = Date.now() + 2500;
    const t = await createToken({ name: 'expiring', scopes: ['read'], expiresAt: new Date(soon).toISOString() });
    assert.equal((await svc.request('GET', '/v1/settings', { token: t.secret })).status, 200);
    await new Promise((r) => setTimeout(r, Math.max(0, soon - Date.now() + 100)));
    const expired = await svc.request('GET', '/v1/settings', { token: t.secret });
    assert.equal(expired.status, 401);
    assert.match(expired.json.error.message, /expired/);
  });

  test('validation: unknown fields are INVALID_JSON, bad values INVALID_REQUEST naming the param', async () => {
    const unknown = await svc.request('POST', '/v1/tokens', { body: { name: 'x', secret: 'sk-svc-mine' } });
    assert.equal(unknown.status, 400);
    assert.equal(unknown.json.error.code, 'INVALID_JSON');
    const cases: [unknown, string][] = [
      [{}, 'name'],
      [{ name: '' }, 'name'],
      [{ name: 'x', scopes: ['root'] }, 'scopes[0]'],
      [{ name: 'x', scopes: [] }, 'scopes'],
      [{ name: 'x', scopes: ['read', 'read'] }, 'scopes'],
      [{ name: 'x', serviceAccountId: 'sa_unknown' }, 'serviceAccountId'],
    ];
    for (const [body, param] of cases) {
      const reply = await svc.request('POST', '/v1/tokens', { body });
      assert.equal(reply.status, 400, JSON.stringify(body));
      assert.equal(reply.json.error.code, 'INVALID_REQUEST', JSON.stringify(body));
      assert.equal(reply.json.error.param, param, JSON.stringify(body));
    }
    const missing = await svc.request('PATCH', '/v1/tokens/tok_nope', { body: { name: 'y' } });
    assert.equal(missing.status, 404);
  });

  test('lastUsedAt reflects use', async () => {
    const t = await createToken({ name: 'used', scopes: ['read'] });
    assert.equal(t.token.scopes[0], 'read');
    await svc.request('GET', '/v1/settings', { token: t.secret });
    const one = await svc.request('GET', `/v1/tokens/${t.token.id}`);
    assert.ok(one.json.lastUsedAt !== null && Date.parse(one.json.lastUsedAt) > Date.now() - 60_000);
  });

  test('revoking the bootstrap token removes the token file', async () => {
    const admin2 = await createToken({ name: 'second admin', scopes: ['admin'] });
    const list = await svc.request('GET', '/v1/tokens', { token: admin2.secret });
    const bootstrap = list.json.data.find((t: { name: string }) => t.name === 'bootstrap admin');
    const del = await svc.request('DELETE', `/v1/tokens/${bootstrap.id}`, { token: admin2.secret });
    assert.equal(del.status, 200);
    assert.throws(() => statSync(join(svc.home, 'token')), /ENOENT/);
    assert.equal((await svc.request('GET', '/v1/settings')).status, 401, 'the old admin token is dead');
  });
});
