import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { after, before, describe, test } from 'node:test';
import * as openaiFake from '../fakes/openai.ts';
import { startService, type TestService } from '../helpers/service.ts';

// What a provider's model list may bring into the catalog: never this service's own catalog (a provider
// pointed at its own listener), never more than the per-provider bound.

let svc: TestService;
let many: openaiFake.OpenAIFake;

before(async () => {
  many = await openaiFake.start({ flavour: 'compatible' });
  many.setModels(Array.from({ length: 2_500 }, (_, i) => ({ id: `bulk-${String(i).padStart(4, '0')}` })));
  svc = await startService();
});
after(async () => {
  await svc.stop();
  await many.close();
});

describe("a provider pointed at the service's own listener", () => {
  const forms = () => [
    `http://127.0.0.1:${svc.port}/v1`,
    `http://localhost:${svc.port}/v1`,
    `http://LocalHost.:${svc.port}`,
    `http://[::1]:${svc.port}/v1`,
    `http://0.0.0.0:${svc.port}/v1`,
    `http://127.12.0.3:${svc.port}/v1`,
    `http://[::ffff:127.0.0.1]:${svc.port}/v1`,
    `http://2130706433:${svc.port}/v1`,
    `http://${hostname()}:${svc.port}/v1`,
  ];

  test('is refused at create, with a 400 naming baseUrl, in every spelling of this machine', async () => {
    for (const [i, baseUrl] of forms().entries()) {
      const reply = await svc.request('POST', '/v1/providers', { body: { kind: 'openai_compatible', id: `self-${i}`, baseUrl } });
      assert.equal(reply.status, 400, `${baseUrl}: ${reply.text}`);
      assert.equal(reply.json.error.code, 'INVALID_REQUEST');
      assert.equal(reply.json.error.param, 'baseUrl');
      assert.match(reply.json.error.message, /own listener/);
      assert.equal((await svc.request('GET', `/v1/providers/self-${i}`)).status, 404);
    }
  });

  test('is refused at PATCH; the same host on another port is fine', async () => {
    const other = `http://127.0.0.1:${svc.port === 9 ? 10 : 9}/v1`;
    const created = await svc.request('POST', '/v1/providers', { body: { kind: 'openai_compatible', id: 'elsewhere', baseUrl: other, autoProxyModels: false } });
    assert.equal(created.status, 201, created.text);
    for (const baseUrl of forms()) {
      const reply = await svc.request('PATCH', '/v1/providers/elsewhere', { body: { baseUrl } });
      assert.equal(reply.status, 400, `${baseUrl}: ${reply.text}`);
      assert.equal(reply.json.error.param, 'baseUrl');
    }
    assert.equal((await svc.request('GET', '/v1/providers/elsewhere')).json.baseUrl, other);
  });
});

describe('the per-provider model bound', () => {
  test('a refresh keeps the first 2,000 models and says it left the rest out', async () => {
    const created = await svc.request('POST', '/v1/providers', { body: { kind: 'openai_compatible', id: 'bulk', baseUrl: many.baseUrl, autoProxyModels: false } });
    assert.equal(created.status, 201, created.text);
    await svc.request('PATCH', '/v1/providers/bulk', { body: { autoProxyModels: true } });
    const refreshed = await svc.request('POST', '/v1/providers/bulk/actions/refresh-models');
    assert.equal(refreshed.status, 200, refreshed.text);
    assert.equal(refreshed.json.modelCount, 2_000);
    assert.equal(refreshed.json.truncated, true);
    assert.equal(refreshed.json.listedCount, 2_500);
    assert.equal(refreshed.json.modelLimit, 2_000);
    const catalog = await svc.request('GET', '/v1/catalog/models?providerId=bulk');
    const ids = (catalog.json.data as { id: string }[]).map((m) => m.id);
    assert.equal(ids.length, 2_000);
    assert.equal(ids.at(-1), 'bulk/bulk-1999', 'the first ones, in the upstream order');
    const listing = await svc.request('GET', '/v1/providers/bulk/models');
    assert.deepEqual([listing.json.data.length, listing.json.truncated, listing.json.listedCount], [2_000, true, 2_500]);
  });

  test('a list within the bound is not marked truncated', async () => {
    many.setModels([{ id: 'one' }, { id: 'two' }]);
    const refreshed = await svc.request('POST', '/v1/providers/bulk/actions/refresh-models');
    assert.deepEqual([refreshed.json.modelCount, refreshed.json.truncated, refreshed.json.listedCount], [2, false, 2]);
  });
});
