import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import * as anthropicFake from '../fakes/anthropic.ts';
import * as openaiFake from '../fakes/openai.ts';
import { tempHome } from '../helpers/service.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// Discovery end to end: fakes speak each provider's model-list protocol, the service lists through its
// proxy workers with credentials from the vault, and the official SDKs read /v1/models.

const OPENAI_KEY = `fake-openai-key-${process.pid}`;
const ANTHROPIC_KEY = `fake-anthropic-key-${process.pid}`;
const CHAT_MODELS = Array.from({ length: 45 }, (_, i) => ({ id: `chat-model-${String(i).padStart(2, '0')}` }));

let svc: InProcessService;
let home: string;
let oa: openaiFake.OpenAIFake;
let an: anthropicFake.AnthropicFake;

const ids = async (headers: Record<string, string> = {}) => {
  const reply = await svc.request('GET', '/v1/models', { headers });
  assert.equal(reply.status, 200, reply.text);
  return (reply.json.data as { id: string }[]).map((m) => m.id);
};

before(async () => {
  oa = await openaiFake.start({ apiKey: OPENAI_KEY });
  oa.setModels([...CHAT_MODELS, { id: 'omni-moderation-latest' }]);
  an = await anthropicFake.start({ apiKey: ANTHROPIC_KEY, pageSize: 10 });
  an.setModels([{ id: 'claude-test-1', displayName: 'Claude Test 1', createdAt: '2026-01-01T00:00:00Z' }]);
  home = tempHome();
  svc = await startInProcess({ home });
  const created = await svc.request('POST', '/v1/providers', {
    body: { kind: 'openai', baseUrl: oa.baseUrl, credential: OPENAI_KEY },
  });
  assert.equal(created.status, 201, created.text);
  const refreshed = await svc.request('POST', '/v1/providers/openai/actions/refresh-models');
  assert.equal(refreshed.status, 200, refreshed.text);
  assert.equal(refreshed.json.modelCount, 46);
});
after(async () => {
  await svc.stop();
  await oa.close();
  await an.close();
});

describe('auto-proxied models', () => {
  test('appear as <providerId>/<upstreamModelId>; models without a family are not listed', async () => {
    const list = await ids();
    assert.equal(list.length, 45);
    assert.ok(list.every((id) => id.startsWith('openai/chat-model-')));
    assert.deepEqual(list, [...list].sort());
    const catalog = await svc.request('GET', '/v1/catalog/models?source=auto&providerId=openai');
    assert.equal(catalog.json.data.length, 46, 'the management view keeps the moderation model');
  });

  test('the upstream saw the stored credential and never the local token', () => {
    assert.ok(oa.requests.length > 0);
    for (const r of oa.requests) {
      assert.equal(r.headers['authorization'], `Bearer ${OPENAI_KEY}`);
      assert.ok(!r.rawHeaders.join('\n').includes(svc.adminToken));
    }
  });

  test('the official openai client lists them', async () => {
    const client = new OpenAI({ baseURL: `${svc.url}/v1`, apiKey: svc.adminToken });
    const seen: string[] = [];
    for await (const m of client.models.list()) seen.push(m.id);
    assert.equal(seen.length, 45);
    assert.equal(seen[0], 'openai/chat-model-00');
    const one = await client.models.retrieve('openai/chat-model-07');
    assert.equal(one.owned_by, 'openai');
  });

  test('the official @anthropic-ai/sdk client pages through all 45 with limit 20', async () => {
    const before = svc.logLines().length;
    const client = new Anthropic({ baseURL: svc.url, apiKey: svc.adminToken });
    const seen: string[] = [];
    for await (const m of client.models.list({ limit: 20 })) {
      assert.equal(m.type, 'model');
      seen.push(m.id);
    }
    assert.equal(seen.length, 45);
    assert.equal(new Set(seen).size, 45);
    // Three pages of at most 20: the request log (written asynchronously) shows three list calls.
    const pageCalls = () =>
      svc
        .logLines()
        .slice(before)
        .filter((l) => l.route === 'GET /v1/models').length;
    await svc.waitForLog(() => pageCalls() >= 3);
    assert.equal(pageCalls(), 3);
  });

  test('styleB pages: first_id, last_id, has_more, before_id', async () => {
    const h = { 'anthropic-version': '2023-06-01' };
    const first = await svc.request('GET', '/v1/models?limit=20', { headers: h });
    assert.equal(first.json.data.length, 20);
    assert.equal(first.json.has_more, true);
    assert.equal(first.json.first_id, 'openai/chat-model-00');
    assert.equal(first.json.last_id, 'openai/chat-model-19');
    assert.equal(first.json.data[0].display_name, 'chat-model-00');
    assert.match(first.json.data[0].created_at, /^\d{4}-\d\d-\d\dT/);
    const last = await svc.request(
      'GET',
      `/v1/models?limit=20&after_id=${encodeURIComponent('openai/chat-model-39')}`,
      { headers: h },
    );
    assert.deepEqual([last.json.data.length, last.json.has_more], [5, false]);
    const back = await svc.request(
      'GET',
      `/v1/models?limit=5&before_id=${encodeURIComponent('openai/chat-model-20')}`,
      { headers: { 'styleB-version': '1' } },
    );
    assert.equal(back.json.first_id, 'openai/chat-model-15');
    assert.equal(back.json.has_more, true);
    for (const q of ['limit=0', 'limit=1001', 'after_id=nope', 'after_id=a&before_id=b']) {
      const bad = await svc.request('GET', `/v1/models?${q}`, { headers: h });
      assert.equal(bad.status, 400, q);
      assert.equal(bad.json.error.code, 'INVALID_REQUEST', q);
    }
  });

  test('styleA mode refuses the styleB paging parameters', async () => {
    for (const q of ['limit=20', 'after_id=x', 'before_id=x']) {
      const reply = await svc.request('GET', `/v1/models?${q}`);
      assert.equal(reply.status, 400, q);
      assert.equal(reply.json.error.param, q.split('=')[0]);
    }
  });

  test('come and go with the provider’s enabled and autoProxyModels flags', async () => {
    await svc.request('PATCH', '/v1/providers/openai', { body: { enabled: false } });
    assert.deepEqual(await ids(), []);
    assert.equal((await svc.request('GET', '/v1/models/openai%2Fchat-model-01')).json.error.code, 'MODEL_NOT_FOUND');
    await svc.request('PATCH', '/v1/providers/openai', { body: { enabled: true } });
    assert.equal((await ids()).length, 45);
    await svc.request('PATCH', '/v1/providers/openai', { body: { autoProxyModels: false } });
    assert.deepEqual(await ids(), []);
    await svc.request('PATCH', '/v1/providers/openai', { body: { autoProxyModels: true } });
    assert.equal((await ids()).length, 45);
  });
});

describe('explicit records', () => {
  test('win over auto ones, hide models, and give aliases', async () => {
    const created = await svc.request('POST', '/v1/catalog/models', {
      body: {
        providerId: 'openai',
        upstreamModelId: 'chat-model-03',
        displayName: 'Curated',
        aliases: ['fast'],
        pricing: { inputPerMTok: 1, outputPerMTok: 2 },
      },
    });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.json.source, 'explicit');
    assert.deepEqual(
      created.json.families,
      ['styleA.chat_completions', 'styleA.responses'],
      'families taken from the listing',
    );
    assert.deepEqual(created.json.pricing, {
      inputPerMTok: 1,
      outputPerMTok: 2,
      cachedInputPerMTok: null,
      cacheWritePerMTok: null,
      cacheWrite1hPerMTok: null,
      currency: 'USD',
    });
    const b = await svc.request('GET', '/v1/models/openai%2Fchat-model-03', {
      headers: { 'anthropic-version': '2023-06-01' },
    });
    assert.equal(b.json.display_name, 'Curated');

    const hidden = await svc.request('PATCH', '/v1/catalog/models/openai%2Fchat-model-04', { body: { hidden: true } });
    assert.equal(hidden.status, 200, hidden.text);
    assert.equal(hidden.json.source, 'explicit', 'patching an auto model makes it explicit');
    const list = await ids();
    assert.equal(list.length, 44);
    assert.ok(!list.includes('openai/chat-model-04'));
    assert.equal((await svc.request('GET', '/v1/models/openai%2Fchat-model-04')).status, 404);
    assert.equal((await svc.request('GET', '/v1/catalog/models?hidden=true')).json.data.length, 1);

    const dupAlias = await svc.request('POST', '/v1/catalog/models', {
      body: { providerId: 'openai', upstreamModelId: 'chat-model-05', aliases: ['fast'] },
    });
    assert.equal(dupAlias.status, 409);
    assert.equal(dupAlias.json.error.param, 'aliases[0]');

    const unhide = await svc.request('DELETE', '/v1/catalog/models/openai%2Fchat-model-04');
    assert.equal(unhide.status, 200);
    assert.equal((await ids()).length, 45, 'deleting the record brings the auto model back');
    const autoDelete = await svc.request('DELETE', '/v1/catalog/models/openai%2Fchat-model-04');
    assert.equal(autoDelete.json.error.code, 'CONFLICT');
  });

  test('validation of model records', async () => {
    const cases: [unknown, number, string][] = [
      [{ providerId: 'ghost', upstreamModelId: 'x', families: ['styleA.chat_completions'] }, 400, 'providerId'],
      [{ providerId: 'openai', upstreamModelId: 'never-listed' }, 400, 'families'],
      [{ providerId: 'openai', upstreamModelId: 'x', families: ['styleB.messages'] }, 400, 'families[0]'],
      [{ providerId: 'openai', upstreamModelId: 'x', families: ['styleA.video'] }, 400, 'families[0]'],
      [
        { providerId: 'openai', upstreamModelId: 'x', families: ['styleA.chat_completions'], aliases: ['@preset/x'] },
        400,
        'aliases[0]',
      ],
      [
        {
          providerId: 'openai',
          upstreamModelId: 'x',
          families: ['styleA.chat_completions'],
          acceleration: { mode: 'draft', draftModelId: 'openai/chat-model-01' },
        },
        400,
        'acceleration',
      ],
      [{ providerId: 'openai', upstreamModelId: 'chat-model-03' }, 409, 'upstreamModelId'],
    ];
    for (const [body, status, param] of cases) {
      const reply = await svc.request('POST', '/v1/catalog/models', { body });
      assert.equal(reply.status, status, JSON.stringify(body) + reply.text);
      assert.equal(reply.json.error.param, param, JSON.stringify(body));
    }
    assert.equal((await svc.request('GET', '/v1/catalog/models/nope%2Fnope')).status, 404);
    assert.equal((await svc.request('GET', '/v1/catalog/models?family=nope')).status, 400);
    const busy = await svc.request('DELETE', '/v1/providers/openai');
    assert.equal(busy.status, 409, 'a provider with explicit records cannot be deleted');
  });
});

describe('credentials through restarts', () => {
  test('survive a restart; clearing one makes the upstream refuse', async () => {
    await svc.stop();
    svc = await startInProcess({ home });
    oa.requests.length = 0;
    const refreshed = await svc.request('POST', '/v1/providers/openai/actions/refresh-models');
    assert.equal(refreshed.status, 200, refreshed.text);
    assert.equal(oa.requests.at(-1)!.headers['authorization'], `Bearer ${OPENAI_KEY}`);

    await svc.request('PATCH', '/v1/providers/openai', { body: { credential: null } });
    const refused = await svc.request('POST', '/v1/providers/openai/actions/refresh-models');
    assert.equal(refused.status, 502);
    assert.equal(refused.json.error.code, 'UPSTREAM_AUTH_FAILED');
    assert.equal((await ids()).length, 45, 'a failed refresh keeps the last good list');
  });

  test('an anthropic provider lists through its paginated API with x-api-key', async () => {
    const created = await svc.request('POST', '/v1/providers', {
      body: { kind: 'anthropic', baseUrl: an.baseUrl, credential: ANTHROPIC_KEY },
    });
    assert.equal(created.status, 201);
    const refreshed = await svc.request('POST', '/v1/providers/anthropic/actions/refresh-models');
    assert.equal(refreshed.json.modelCount, 1);
    const req = an.requests.at(-1)!;
    assert.equal(req.headers['x-api-key'], ANTHROPIC_KEY);
    assert.equal(req.headers['authorization'], undefined);
    const m = await svc.request('GET', '/v1/models/anthropic%2Fclaude-test-1');
    assert.equal(m.status, 200);
    const test = await svc.request('POST', '/v1/providers/anthropic/actions/test');
    assert.deepEqual([test.json.ok, test.json.modelCount], [true, 1]);
  });

  test('no key reached a response or the log', () => {
    for (const key of [OPENAI_KEY, ANTHROPIC_KEY]) {
      assert.ok(!svc.responsesText().includes(key));
      assert.ok(!svc.log().includes(key));
    }
  });
});
