import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import * as openaiFake from '../fakes/openai.ts';
import { assertSecretsNowhere } from '../helpers/service.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// Sentinels in every place a Gauge secret could enter: account and source credentials, an email-looking label,
// and a provider-side organization ID on the relayed answers whose rate-limit headers Gauge reads. None of them
// may appear in any response, in the service's log, or in any file under the data directory but the vault's.
// The service is started a second time on the same data directory only to show live readings survive it.

const KEY = `fake-openai-key-${process.pid}`;
const CREDENTIALS = [
  `sk-admin-SENTINELCRED0001${process.pid}aaaaaaaa`,
  'gauge-SENTINELCRED0002',
  'gauge-SENTINELCRED0003',
];
const EMAIL_LOCAL = 'grace.SENTINELMAIL';
const ORG = 'org-SENTINELORG9d8e7f';
const SENTINELS = [...CREDENTIALS, EMAIL_LOCAL, ORG];

let svc: InProcessService;
let fake: openaiFake.OpenAIFake;
before(async () => {
  fake = await openaiFake.start({ apiKey: KEY });
  fake.setModels([{ id: 'gpt-test' }]);
  svc = await startInProcess({
    env: { SWITCHYARD_GAUGE_ALLOWED_HOSTS: 'loopback', SWITCHYARD_GAUGE_TIMEOUT_MS: '5000' },
  });
});
after(async () => {
  await svc.stop();
  await fake.close();
});

const completion = {
  id: 'chatcmpl-x',
  object: 'chat.completion',
  created: 1,
  model: 'gpt-test',
  choices: [],
  usage: { prompt_tokens: 3, completion_tokens: 4, total_tokens: 7 },
};

async function until<T>(read: () => Promise<T | undefined>, what: string): Promise<T> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const value = await read();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`never saw ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test(
  'live rate-limit headers become a reading; no credential, email or provider-side ID is kept ' + 'anywhere',
  async () => {
    assert.equal((await svc.request('PATCH', '/v1/settings', { body: { gauge: { enabled: true } } })).status, 200);
    assert.equal(
      (
        await svc.request('POST', '/v1/providers', {
          body: { id: 'oai', kind: 'openai', baseUrl: fake.baseUrl, credential: KEY, autoProxyModels: false },
        })
      ).status,
      201,
    );
    assert.equal(
      (
        await svc.request('POST', '/v1/catalog/models', {
          body: { providerId: 'oai', upstreamModelId: 'gpt-test', families: ['styleA.chat_completions'] },
        })
      ).status,
      201,
    );
    fake.failNext(200, completion, {
      'openai-organization': ORG,
      'x-ratelimit-limit-requests': '5000',
      'x-ratelimit-remaining-requests': '4999',
      'x-ratelimit-reset-requests': '12ms',
      'x-ratelimit-limit-tokens': '800000',
      'x-ratelimit-remaining-tokens': '799990',
      'x-ratelimit-reset-tokens': '1s',
    });
    const chat = await svc.request('POST', '/v1/chat/completions', {
      body: { model: 'oai/gpt-test', messages: [{ role: 'user', content: 'hi' }] },
    });
    assert.equal(chat.status, 200, chat.text);
    const live = await until(
      async () => (await svc.request('GET', '/v1/gauge/readings?accountId=live-headers.oai')).json.data[0],
      'the live-headers reading',
    );
    assert.equal(live.source, 'live_headers');
    assert.equal(live.providerId, 'openai');
    assert.deepEqual(
      live.windows.map((w: { kind: string; limit: number; remaining: number }) => [w.kind, w.limit, w.remaining]),
      [
        ['requests', 5000, 4999],
        ['tokens', 800000, 799990],
      ],
    );

    const created = await svc.request('POST', '/v1/gauge/accounts', {
      body: {
        providerId: 'openai',
        authMode: 'admin_key',
        label: `${EMAIL_LOCAL}@example.com`,
        credential: CREDENTIALS[0],
        config: { baseUrl: fake.baseUrl },
      },
    });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.json.label, '@example.com');
    const id = created.json.id;
    assert.equal(
      (
        await svc.request('PATCH', `/v1/gauge/accounts/${id}`, {
          body: { credential: CREDENTIALS[1], label: `Ops <${EMAIL_LOCAL}@example.org>` },
        })
      ).status,
      200,
    );
    assert.equal(
      (await svc.request('PUT', `/v1/gauge/sources/${id}`, { body: { credential: CREDENTIALS[2] } })).status,
      200,
    );
    // Whatever the account's collector makes of the fake's answers, its outcome is redacted.
    const refreshed = await svc.request('POST', '/v1/gauge/refresh', {
      body: { sourceIds: [id, 'service', 'live-headers'] },
    });
    assert.equal(refreshed.status, 200, refreshed.text);
    assert.deepEqual(
      refreshed.json.data.map((o: { sourceId: string }) => o.sourceId),
      [id, 'service', 'live-headers'],
    );
    for (const path of [
      '/v1/gauge',
      '/v1/gauge/accounts',
      '/v1/gauge/sources',
      '/v1/gauge/readings',
      '/v1/gauge/statuses',
      '/v1/gauge/diagnostics',
      '/v1/audit-events',
    ]) {
      assert.equal((await svc.request('GET', path)).status, 200, path);
    }

    await svc.stop();
    assertSecretsNowhere(svc, SENTINELS);

    // Live-header readings are in LMDB, not in memory: the same data directory started again still has them.
    const again = await startInProcess({ home: svc.home, env: { SWITCHYARD_GAUGE_ALLOWED_HOSTS: 'loopback' } });
    try {
      const kept = await again.request('GET', '/v1/gauge/readings?accountId=live-headers.oai');
      assert.deepEqual(kept.json.data, [live]);
      // Deleting the provider takes its live-header readings along (W3.5 item 11): latest and history.
      assert.equal((await again.request('DELETE', '/v1/catalog/models/oai%2Fgpt-test')).status, 200);
      assert.equal((await again.request('DELETE', '/v1/providers/oai')).status, 200);
      assert.deepEqual((await again.request('GET', '/v1/gauge/readings?accountId=live-headers.oai')).json.data, []);
      const history = (await again.request('GET', '/v1/gauge')).json;
      assert.ok(Array.isArray(history.history));
      assert.ok(!JSON.stringify(history).includes('live-headers.oai'), 'no history of the deleted provider');
    } finally {
      await again.stop();
    }
  },
);
