import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { openStoreEnv } from '../../store/env.ts';
import { responseRouteRepo } from '../../store/response-route-repo.ts';
import * as openaiFake from '../fakes/openai.ts';
import { startService, type Reply, type TestService } from '../helpers/service.ts';

// Regression (W2.6, critical): an upstream whose response IDs were 1,979 characters or longer killed the
// service. The relay remembers which provider created each response, LMDB refused the key, and the throw
// reached a worker message handler. Through the real service and a fake OpenAI with 5,000-character IDs:
// such an ID is answered whole, but not remembered (no client can name it in a path: 400), and the store's
// keys are bounded anyway (test/store/keys.suite.ts).

const KEY = `fake-openai-key-${process.pid}`;
const ID_LENGTH = 5000;
let svc: TestService;
let oa: openaiFake.OpenAIFake;
const created: string[] = [];

before(async () => {
  oa = await openaiFake.start({ apiKey: KEY });
  oa.setModels([{ id: 'gpt-test' }]);
  oa.setOutput({ idLength: ID_LENGTH });
  svc = await startService();
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

async function stillServing(): Promise<void> {
  assert.equal(svc.process.exitCode, null, 'the service process is alive');
  assert.equal((await svc.request('GET', '/health', { token: null })).status, 200);
}

/** What a client gets for a response it names by an ID over the path limit: refused cleanly as too long. */
function assertRefused(reply: Reply): void {
  assert.equal(reply.status, 400, reply.text.slice(0, 300));
  assert.equal(typeof reply.json?.error?.code, 'string', 'an error envelope');
  assert.equal(reply.json.error.param, 'id');
}

describe('an upstream with response IDs far past LMDB’s key limit', () => {
  test('a create answers with the whole ID, and the service stays up', async () => {
    const reply = await svc.request('POST', '/v1/responses', { body: { model: 'openai/gpt-test', input: 'hello' } });
    assert.equal(reply.status, 200, reply.text.slice(0, 300));
    const id = reply.json.id as string;
    assert.ok(id.length >= ID_LENGTH, `id of ${id.length} characters`);
    assert.ok(oa.storedResponses.has(id), 'the upstream’s own ID, unchanged');
    created.push(id);
    await stillServing();
    assertRefused(await svc.request('GET', `/v1/responses/${id}`));
    await stillServing();
  });

  test('a streamed create names it in its events, and the service stays up', async () => {
    const reply = await svc.request('POST', '/v1/responses', {
      body: { model: 'openai/gpt-test', input: 'hello', stream: true },
    });
    assert.equal(reply.status, 200, reply.text.slice(0, 300));
    assert.match(reply.headers['content-type'] ?? '', /text\/event-stream/);
    const firstEvent = reply.text.split('\n').find((l) => l.startsWith('data: '))!;
    const id = JSON.parse(firstEvent.slice('data: '.length)).response.id as string;
    assert.ok(id.length >= ID_LENGTH && oa.storedResponses.has(id));
    assert.match(reply.text, /response\.completed/);
    created.push(id);
    await stillServing();
    assertRefused(await svc.request('DELETE', `/v1/responses/${id}`));
    await stillServing();
  });

  test(
    'nothing failed on the way: no callback failure, no internal error, and no route was stored for ' + 'them',
    async () => {
      assert.equal(created.length, 2);
      const failures = svc.logLines().filter((l) => typeof l.level === 'number' && l.level >= 50);
      assert.deepEqual(failures, []);
      // The routes are committed shortly after the answers; read them from the store once the service stopped.
      assert.equal(await svc.stop(), 0);
      const env = openStoreEnv(svc.home);
      try {
        const routes = responseRouteRepo(env);
        for (const id of created) assert.equal(routes.providerOf(id), undefined);
      } finally {
        await env.close();
      }
    },
  );
});
