import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

let svc: InProcessService;
const CROCKFORD = '0123456789ABCDEFGHJKMNPQRSTVWXYZ';
/** One more than requestLog.tokenIds takes, each of the token ID pattern. */
const SIXTY_FIVE_TOKEN_IDS = Array.from(
  { length: 65 },
  (_, i) => `tok_01KAAAAAAAAAAAAAAAAAAAAA${CROCKFORD[i >> 5]}${CROCKFORD[i & 31]}`,
);
before(async () => {
  svc = await startInProcess();
});
after(async () => {
  await svc.stop();
});

describe('GET /v1/settings', () => {
  test('reports bind, CORS, runtime, usage and Gauge posture', async () => {
    const reply = await svc.request('GET', '/v1/settings');
    assert.equal(reply.status, 200);
    assert.deepEqual(reply.json.bind, {
      host: '127.0.0.1',
      port: svc.port,
      networkExposed: false,
      pending: null,
      restartRequired: false,
    });
    assert.deepEqual(reply.json.cors, { allowedOrigins: [], wildcard: false });
    assert.deepEqual(reply.json.runtime, {
      modelsDirectory: null,
      tuning: { contextSize: 0, threads: 0, gpuLayers: 0, parallel: 0, batchSize: 0 },
      keepAliveSeconds: 300,
      memoryBudgetBytes: null,
      loadQueueSize: 16,
      loadWaitSeconds: 30,
    });
    assert.equal(typeof reply.json.usage.enabled, 'boolean');
    assert.equal(reply.json.gauge.enabled, false);
    assert.deepEqual(reply.json.requestLog, { enabled: false, tokenIds: [], retentionDays: 7, maxMegabytes: 256 });
    assert.deepEqual(reply.json.traces, { enabled: false, endpoint: null, headerNames: [] });
  });

  test('never holds the token, the data directory, the database path or a credential reference', async () => {
    const reply = await svc.request('GET', '/v1/settings');
    assert.ok(!reply.text.includes(svc.adminToken));
    assert.ok(!reply.text.includes(svc.home));
    assert.ok(!/store\.mdb|credentialRef|dataDir|tokenFile/i.test(reply.text));
  });
});

describe('PATCH /v1/settings', () => {
  test('vault says why credentials are in the file vault (W2.7)', async () => {
    // The test services run with SWITCHYARD_VAULT=file; without a keychain the reason names what is missing.
    const { vault } = (await svc.request('GET', '/v1/settings')).json;
    assert.deepEqual(
      { backend: vault.backend, reason: vault.reason },
      { backend: 'file', reason: 'SWITCHYARD_VAULT=file asks for the file vault' },
    );
  });

  test('bind.networkExposed is reported as pending until restart', async () => {
    const reply = await svc.request('PATCH', '/v1/settings', { body: { bind: { networkExposed: true } } });
    assert.equal(reply.status, 200);
    assert.equal(reply.json.bind.networkExposed, false, 'the listener is still local-only');
    assert.deepEqual(reply.json.bind.pending, { networkExposed: true });
    assert.equal(reply.json.bind.restartRequired, true);
    assert.equal(reply.json.bind.host, '127.0.0.1');
    const back = await svc.request('PATCH', '/v1/settings', { body: { bind: { networkExposed: false } } });
    assert.equal(back.json.bind.pending, null);
  });

  test('hosts and ports cannot be supplied', async () => {
    for (const bind of [{ host: '0.0.0.0' }, { port: 80 }]) {
      const reply = await svc.request('PATCH', '/v1/settings', { body: { bind } });
      assert.equal(reply.status, 400);
      assert.equal(reply.json.error.code, 'INVALID_JSON');
    }
  });

  test('runtime.modelsDirectory and runtime.tuning merge field by field', async () => {
    const models = join(svc.home, 'elsewhere-models');
    mkdirSync(models);
    const a = await svc.request('PATCH', '/v1/settings', {
      body: { runtime: { modelsDirectory: models, tuning: { threads: 2, contextSize: 8192 } } },
    });
    assert.equal(a.status, 200, a.text);
    const b = await svc.request('PATCH', '/v1/settings', { body: { runtime: { tuning: { gpuLayers: -1 } } } });
    assert.deepEqual(b.json.runtime, {
      modelsDirectory: models,
      tuning: { contextSize: 8192, threads: 2, gpuLayers: -1, parallel: 0, batchSize: 0 },
      keepAliveSeconds: 300,
      memoryBudgetBytes: null,
      loadQueueSize: 16,
      loadWaitSeconds: 30,
    });
    // A directory that does not exist (a typo, an unmounted drive) is refused, not taken silently (W2.7).
    const missing = await svc.request('PATCH', '/v1/settings', {
      body: { runtime: { modelsDirectory: join(svc.home, 'no-such-dir') } },
    });
    assert.equal(missing.status, 400);
    assert.equal(missing.json.error.param, 'runtime.modelsDirectory');
    assert.match(missing.json.error.message, /does not name an existing directory/);
    assert.doesNotMatch(missing.text, /no-such-dir/, 'the path is not echoed');
    const reset = await svc.request('PATCH', '/v1/settings', {
      body: { runtime: { modelsDirectory: null, tuning: { threads: 0 } } },
    });
    assert.equal(reset.json.runtime.modelsDirectory, null);
    assert.equal(reset.json.runtime.tuning.threads, 0);
  });

  test('usage and Gauge posture', async () => {
    const reply = await svc.request('PATCH', '/v1/settings', {
      body: { usage: { retentionDays: 30 }, gauge: { enabled: true } },
    });
    assert.equal(reply.json.usage.retentionDays, 30);
    assert.equal(reply.json.gauge.enabled, true);
    assert.equal(reply.json.gauge.retentionDays, 90);
  });

  test('routing.sessionIdleMinutes: 10 by default, set alone', async () => {
    assert.equal((await svc.request('GET', '/v1/settings')).json.routing.sessionIdleMinutes, 10);
    const reply = await svc.request('PATCH', '/v1/settings', { body: { routing: { sessionIdleMinutes: 30 } } });
    assert.deepEqual(reply.json.routing, { providerOrder: [], sessionIdleMinutes: 30 });
  });

  test('requestLog merges field by field; tokenIds is replaced whole', async () => {
    const id = 'tok_01KAAAAAAAAAAAAAAAAAAAAAAA';
    const a = await svc.request('PATCH', '/v1/settings', { body: { requestLog: { tokenIds: [id], maxMegabytes: 8 } } });
    assert.deepEqual(a.json.requestLog, { enabled: false, tokenIds: [id], retentionDays: 7, maxMegabytes: 8 });
    const b = await svc.request('PATCH', '/v1/settings', { body: { requestLog: { retentionDays: 90, tokenIds: [] } } });
    assert.deepEqual(b.json.requestLog, { enabled: false, tokenIds: [], retentionDays: 90, maxMegabytes: 8 });
    await svc.request('PATCH', '/v1/settings', { body: { requestLog: { retentionDays: 7, maxMegabytes: 256 } } });
  });

  test('invalid values are INVALID_REQUEST naming the field', async () => {
    const cases: [unknown, string][] = [
      [{ runtime: { tuning: { threads: -1 } } }, 'runtime.tuning.threads'],
      [{ runtime: { tuning: { contextSize: 1.5 } } }, 'runtime.tuning.contextSize'],
      [{ runtime: { tuning: { gpuLayers: -2 } } }, 'runtime.tuning.gpuLayers'],
      [{ runtime: { modelsDirectory: 'relative/dir' } }, 'runtime.modelsDirectory'],
      [{ cors: { allowedOrigins: ['http://ok.example', 'not an origin'] } }, 'cors.allowedOrigins[1]'],
      [{ cors: { allowedOrigins: ['http://x.example/path'] } }, 'cors.allowedOrigins[0]'],
      [{ cors: { allowedOrigins: 'http://x.example' } }, 'cors.allowedOrigins'],
      [{ gauge: { retentionDays: 0 } }, 'gauge.retentionDays'],
      [{ usage: { enabled: 'yes' } }, 'usage.enabled'],
      [{ bind: { networkExposed: 1 } }, 'bind.networkExposed'],
      [{ routing: { sessionIdleMinutes: 0 } }, 'routing.sessionIdleMinutes'],
      [{ routing: { sessionIdleMinutes: 1441 } }, 'routing.sessionIdleMinutes'],
      [{ requestLog: { enabled: 1 } }, 'requestLog.enabled'],
      [{ requestLog: { retentionDays: 0 } }, 'requestLog.retentionDays'],
      [{ requestLog: { retentionDays: 91 } }, 'requestLog.retentionDays'],
      [{ requestLog: { maxMegabytes: 0 } }, 'requestLog.maxMegabytes'],
      [{ requestLog: { maxMegabytes: 10_241 } }, 'requestLog.maxMegabytes'],
      [{ requestLog: { tokenIds: ['tok_nope'] } }, 'requestLog.tokenIds[0]'],
      [{ requestLog: { tokenIds: SIXTY_FIVE_TOKEN_IDS } }, 'requestLog.tokenIds'],
    ];
    for (const [body, param] of cases) {
      const reply = await svc.request('PATCH', '/v1/settings', { body });
      assert.equal(reply.status, 400, JSON.stringify(body));
      assert.equal(reply.json.error.code, 'INVALID_REQUEST', JSON.stringify(body));
      assert.equal(reply.json.error.param, param, JSON.stringify(body));
    }
    const list = await svc.request('PATCH', '/v1/settings', { body: [] });
    assert.equal(list.json.error.code, 'INVALID_REQUEST');
  });

  test('a rejected patch changes nothing', async () => {
    const before = await svc.request('GET', '/v1/settings');
    await svc.request('PATCH', '/v1/settings', {
      body: { usage: { enabled: false }, runtime: { tuning: { threads: -5 } } },
    });
    const after = await svc.request('GET', '/v1/settings');
    assert.deepEqual(after.json, before.json);
  });

  test('a body is required', async () => {
    const reply = await svc.request('PATCH', '/v1/settings');
    assert.equal(reply.status, 400);
    assert.equal(reply.json.error.code, 'INVALID_JSON');
  });
});
