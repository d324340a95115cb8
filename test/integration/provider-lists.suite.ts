import assert from 'node:assert/strict';
import { hostname } from 'node:os';
import { after, before, describe, test } from 'node:test';
import * as openaiFake from '../fakes/openai.ts';
import { assertSecretsNowhere } from '../helpers/service.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// What a provider's model list may bring into the catalog: never this service's own catalog (a provider
// pointed at its own listener), never more than the per-provider bound, never a model that echoes the key.

// Shaped like nothing the log redactor knows, so only the withholding keeps it out.
const ECHOED = `zz-echoed-key-${process.pid}-${Date.now().toString(36)}`;

let svc: InProcessService;
let many: openaiFake.OpenAIFake;
let echoing: openaiFake.OpenAIFake;
let echoingNames: openaiFake.OpenAIFake;

before(async () => {
  many = await openaiFake.start({ flavour: 'compatible' });
  many.setModels(Array.from({ length: 2_500 }, (_, i) => ({ id: `bulk-${String(i).padStart(4, '0')}` })));
  // Upstreams that echo the key they were sent into what they list: in an ID, and in a display name.
  echoing = await openaiFake.start({ flavour: 'compatible', apiKey: ECHOED });
  echoing.setModels([{ id: 'plain-model' }, { id: `tenant-${ECHOED}-chat` }, { id: ECHOED }]);
  echoingNames = await openaiFake.start({ flavour: 'openrouter', apiKey: ECHOED });
  echoingNames.setModels([{ id: 'vendor/plain' }, { id: 'vendor/named', name: `Model for ${ECHOED}` }]);
  svc = await startInProcess();
});
after(async () => {
  await svc.stop();
  await many.close();
  await echoing.close();
  await echoingNames.close();
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
      const reply = await svc.request('POST', '/v1/providers', {
        body: { kind: 'openai_compatible', id: `self-${i}`, baseUrl },
      });
      assert.equal(reply.status, 400, `${baseUrl}: ${reply.text}`);
      assert.equal(reply.json.error.code, 'INVALID_REQUEST');
      assert.equal(reply.json.error.param, 'baseUrl');
      assert.match(reply.json.error.message, /own listener/);
      assert.equal((await svc.request('GET', `/v1/providers/self-${i}`)).status, 404);
    }
  });

  test('is refused at PATCH; the same host on another port is fine', async () => {
    const other = `http://127.0.0.1:${svc.port === 9 ? 10 : 9}/v1`;
    const created = await svc.request('POST', '/v1/providers', {
      body: { kind: 'openai_compatible', id: 'elsewhere', baseUrl: other, autoProxyModels: false },
    });
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
    const created = await svc.request('POST', '/v1/providers', {
      body: { kind: 'openai_compatible', id: 'bulk', baseUrl: many.baseUrl, autoProxyModels: false },
    });
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
    assert.deepEqual(
      [listing.json.data.length, listing.json.truncated, listing.json.listedCount],
      [2_000, true, 2_500],
    );
  });

  test('a list within the bound is not marked truncated', async () => {
    many.setModels([{ id: 'one' }, { id: 'two' }]);
    const refreshed = await svc.request('POST', '/v1/providers/bulk/actions/refresh-models');
    assert.deepEqual([refreshed.json.modelCount, refreshed.json.truncated, refreshed.json.listedCount], [2, false, 2]);
  });
});

describe('a model list that echoes the provider credential', () => {
  test('the models holding the key are left out, and the refresh says how many', async () => {
    const created = await svc.request('POST', '/v1/providers', {
      body: { kind: 'openai_compatible', id: 'echo', baseUrl: echoing.baseUrl, credential: ECHOED },
    });
    assert.equal(created.status, 201, created.text);
    const refreshed = await svc.request('POST', '/v1/providers/echo/actions/refresh-models');
    assert.equal(refreshed.status, 200, refreshed.text);
    assert.deepEqual([refreshed.json.modelCount, refreshed.json.withheld], [1, 2]);
    const listing = await svc.request('GET', '/v1/providers/echo/models');
    assert.deepEqual(
      listing.json.data.map((m: { upstreamModelId: string }) => m.upstreamModelId),
      ['plain-model'],
    );
    assert.equal(listing.json.withheld, 2);
    const tested = await svc.request('POST', '/v1/providers/echo/actions/test');
    assert.deepEqual([tested.json.ok, tested.json.modelCount], [true, 1]);

    const named = await svc.request('POST', '/v1/providers', {
      body: { kind: 'openrouter', id: 'echo-names', baseUrl: echoingNames.baseUrl, credential: ECHOED },
    });
    assert.equal(named.status, 201, named.text);
    const refreshedNamed = await svc.request('POST', '/v1/providers/echo-names/actions/refresh-models');
    assert.deepEqual([refreshedNamed.json.modelCount, refreshedNamed.json.withheld], [1, 1]);

    const ids = (await svc.request('GET', '/v1/catalog/models')).json.data.map((m: { id: string }) => m.id);
    assert.ok(ids.includes('echo/plain-model') && ids.includes('echo-names/vendor/plain'));
    assert.equal((await svc.request('GET', '/v1/models')).status, 200);
    await svc.request('GET', '/v1/models', { headers: { 'anthropic-version': '2023-06-01' } });
    await svc.request('GET', '/v1/providers/echo-names/models');
    await svc.waitForLog((l) => l['providerId'] === 'echo-names' && l['withheld'] === 1);
  });

  test('the key is in no answer, no log line and no file of the data directory', async () => {
    // The upstreams did receive it: the grep below would be empty for a key that was never used.
    assert.ok(echoing.requests.some((r) => r.headers['authorization'] === `Bearer ${ECHOED}`));
    await svc.stop();
    assertSecretsNowhere(svc, [ECHOED]);
  });
});
