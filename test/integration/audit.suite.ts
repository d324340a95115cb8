import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

let svc: InProcessService;
let patchRequestId: string;
let createdTokenId: string;
let bootstrapId: string;

before(async () => {
  svc = await startInProcess();
  const patch = await svc.request('PATCH', '/v1/settings', {
    body: { cors: { allowedOrigins: ['http://a.example'] } },
  });
  patchRequestId = patch.headers['x-service-request-id']!;
  const created = await svc.request('POST', '/v1/tokens', { body: { name: 'audited', scopes: ['read'] } });
  svc.markSecretBearing(created);
  createdTokenId = created.json.token.id;
  await svc.request('PATCH', `/v1/tokens/${createdTokenId}`, { body: { name: 'audited 2' } });
  await svc.request('DELETE', `/v1/tokens/${createdTokenId}`);
  bootstrapId = (await svc.request('GET', '/v1/tokens')).json.data[0].id;
});
after(async () => {
  await svc.stop();
});

const events = async (query = '') => {
  const reply = await svc.request('GET', `/v1/audit-events${query}`);
  assert.equal(reply.status, 200, reply.text);
  return reply.json as { data: Record<string, any>[]; hasMore: boolean };
};

describe('audit events', () => {
  test('every management write appended one, newest first', async () => {
    const { data, hasMore } = await events();
    assert.equal(hasMore, false);
    assert.deepEqual(
      data.map((e) => e.action),
      ['token.revoke', 'token.update', 'token.create', 'settings.update', 'token.bootstrap'],
    );
    const ids = data.map((e) => e.id);
    assert.deepEqual([...ids].sort().reverse(), ids);
  });

  test('records the actor, request ID and allow-listed metadata only', async () => {
    const { data } = await events(`?requestId=${patchRequestId}`);
    assert.equal(data.length, 1);
    const e = data[0]!;
    assert.equal(e.actorType, 'token');
    assert.equal(e.actorId, bootstrapId);
    assert.equal(e.resourceType, 'settings');
    assert.deepEqual(e.metadata, { changedFields: ['cors.allowedOrigins'] });
    assert.deepEqual(Object.keys(e).sort(), [
      'action',
      'actorId',
      'actorType',
      'createdAt',
      'id',
      'metadata',
      'requestId',
      'resourceId',
      'resourceType',
    ]);
    const boot = (await events('?action=token.bootstrap')).data[0]!;
    assert.equal(boot.actorType, 'system');
    assert.equal(boot.requestId, null);
  });

  test('filters by each attribute', async () => {
    assert.deepEqual(
      (await events(`?resourceType=token&resourceId=${createdTokenId}`)).data.map((e) => e.action),
      ['token.revoke', 'token.update', 'token.create'],
    );
    assert.equal((await events('?actorType=system')).data.length, 1);
    assert.equal((await events(`?actorId=${bootstrapId}`)).data.length, 4);
    assert.equal((await events('?action=settings.update')).data.length, 1);
    assert.equal((await events('?resourceId=nothing')).data.length, 0);
  });

  test('limit pages with hasMore; time bounds are inclusive', async () => {
    const page = await events('?limit=2');
    assert.equal(page.data.length, 2);
    assert.equal(page.hasMore, true);
    const all = (await events()).data;
    const oldest = all[all.length - 1]!.createdAt;
    const newest = all[0]!.createdAt;
    assert.equal((await events(`?createdBefore=${oldest}`)).data.at(-1)!.createdAt, oldest);
    assert.equal((await events(`?createdAfter=${newest}`)).data[0]!.createdAt, newest);
    assert.equal((await events('?createdAfter=2099-01-01T00:00:00Z')).data.length, 0);
    assert.equal((await events('?createdBefore=2000-01-01T00:00:00%2B01:00')).data.length, 0);
  });

  test('bad filters are 400 INVALID_REQUEST naming the param', async () => {
    const cases: [string, string][] = [
      ['limit=0', 'limit'],
      ['limit=501', 'limit'],
      ['limit=ten', 'limit'],
      ['action=token.explode', 'action'],
      ['actorType=robot', 'actorType'],
      ['resourceType=planet', 'resourceType'],
      ['createdAfter=yesterday', 'createdAfter'],
      ['createdBefore=2026-13-01T00:00:00Z', 'createdBefore'],
      ['createdAfter=2026-02-01T00:00:00Z&createdBefore=2026-01-01T00:00:00Z', 'createdAfter'],
      ['resourceId=', 'resourceId'],
      ['sort=asc', 'sort'],
      ['limit=5&limit=6', 'limit'],
    ];
    for (const [query, param] of cases) {
      const reply = await svc.request('GET', `/v1/audit-events?${query}`);
      assert.equal(reply.status, 400, query);
      assert.equal(reply.json.error.code, 'INVALID_REQUEST', query);
      assert.equal(reply.json.error.param, param, query);
    }
  });

  test('no audit record holds a token secret or a path', async () => {
    const text = JSON.stringify((await events('?limit=500')).data);
    assert.ok(!text.includes('sk-svc-'));
    assert.ok(!text.includes(svc.home));
  });
});
