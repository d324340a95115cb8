import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import * as anthropicFake from '../fakes/anthropic.ts';
import { startOpenRouterGaugeFake, type OpenRouterGaugeFake } from '../fakes/gauge/openrouter.ts';
import { openLiveStream } from '../fakes/sse-client.ts';
import * as openaiFake from '../fakes/openai.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// Gauge alerts end to end on one service: rule CRUD and its bad input, a quota_low event fired by a real refresh
// of an OpenRouter account (its key limit is the quota) against the loopback fake, the event state machine and
// delivery over PATCH, filters, a rule's deletion taking only its events, no credential in any answer, and a
// budget across two gateway providers crossing 50/80/100 percent in both bases.

const API_KEY = `sk-or-v1-alerts-test-${process.pid}-0123456789abcdef0123456789abcdef`;
let svc: InProcessService;
let fake: OpenRouterGaugeFake;
let accountId: string;
const OR_KEY = `fake-openrouter-${process.pid}`;
const AN_KEY = `fake-anthropic-${process.pid}`;
let or: openaiFake.OpenAIFake;
let an: anthropicFake.AnthropicFake;

before(async () => {
  fake = await startOpenRouterGaugeFake({
    apiKey: API_KEY,
    managementKey: `sk-or-v1-management-unused-${process.pid}`,
  });
  or = await openaiFake.start({ flavour: 'openrouter', apiKey: OR_KEY });
  an = await anthropicFake.start({ apiKey: AN_KEY });
  svc = await startInProcess({
    env: { SWITCHYARD_GAUGE_ALLOWED_HOSTS: 'loopback', SWITCHYARD_GAUGE_TIMEOUT_MS: '10000' },
  });
});
after(async () => {
  await svc.stop();
  await fake.close();
  await or.close();
  await an.close();
});

const body = (b: unknown) => ({ body: b });
async function expectError(
  method: string,
  path: string,
  status: number,
  code: string,
  options: { body?: unknown } = {},
) {
  const reply = await svc.request(method, path, options);
  assert.equal(reply.status, status, `${method} ${path}: ${reply.text}`);
  assert.equal(reply.json.error.code, code, `${method} ${path}: ${reply.text}`);
  return reply.json.error;
}
async function keyLeft(remaining: number) {
  fake.setKey({
    limit: 10,
    limit_remaining: remaining,
    limit_reset: 'monthly',
    usage: 10 - remaining,
    usage_daily: 0,
    usage_weekly: 0,
    usage_monthly: 10 - remaining,
  });
  const refreshed = await svc.request('POST', '/v1/gauge/refresh', body({ sourceIds: [accountId] }));
  assert.equal(refreshed.status, 200, refreshed.text);
  assert.equal(refreshed.json.data[0].ok, true, refreshed.text);
}
const events = async (query = '') => {
  const reply = await svc.request('GET', `/v1/gauge/alert-events${query}`);
  assert.equal(reply.status, 200, reply.text);
  return reply.json;
};

describe('alert rules', () => {
  test('CRUD in creation order, with audit records; rules are setup and work while Gauge is off', async () => {
    assert.deepEqual((await svc.request('GET', '/v1/gauge/alert-rules')).json, { data: [] });
    const a = await svc.request(
      'POST',
      '/v1/gauge/alert-rules',
      body({ name: 'Ops', kind: 'provider_incident', target: { providerId: 'openai' } }),
    );
    assert.equal(a.status, 201, a.text);
    assert.deepEqual(
      { ...a.json, id: undefined, createdAt: undefined, updatedAt: undefined },
      {
        id: undefined,
        name: 'Ops',
        kind: 'provider_incident',
        target: { providerId: 'openai' },
        threshold: null,
        enabled: true,
        cooldownMinutes: 60,
        createdAt: undefined,
        updatedAt: undefined,
      },
    );
    const b = await svc.request(
      'POST',
      '/v1/gauge/alert-rules',
      body({ name: 'Auth', kind: 'reauth_required', enabled: false, cooldownMinutes: 0 }),
    );
    const patched = await svc.request(
      'PATCH',
      `/v1/gauge/alert-rules/${a.json.id}`,
      body({ name: 'Incidents', target: {} }),
    );
    assert.deepEqual([patched.status, patched.json.name, patched.json.target], [200, 'Incidents', {}]);
    assert.deepEqual(
      (await svc.request('GET', '/v1/gauge/alert-rules')).json.data.map((r: { id: string }) => r.id),
      [a.json.id, b.json.id],
    );
    const deleted = await svc.request('DELETE', `/v1/gauge/alert-rules/${b.json.id}`);
    assert.deepEqual(deleted.json, { id: b.json.id, deleted: true, events: 0 });
    const audit = await svc.request('GET', '/v1/audit-events?resourceType=gauge-alert-rule');
    assert.deepEqual(
      audit.json.data.map((e: { action: string }) => e.action),
      ['gauge-alert-rule.delete', 'gauge-alert-rule.update', 'gauge-alert-rule.create', 'gauge-alert-rule.create'],
    );
    await svc.request('DELETE', `/v1/gauge/alert-rules/${a.json.id}`);
  });

  test('bad bodies, paths and queries are 400; unknown IDs are 404', async () => {
    const rules = '/v1/gauge/alert-rules';
    await expectError('POST', rules, 400, 'INVALID_REQUEST', body({ name: 'x' }));
    await expectError('POST', rules, 400, 'INVALID_REQUEST', body({ name: 'x', kind: 'quota_gone' }));
    await expectError('POST', rules, 400, 'INVALID_REQUEST', body({ name: '', kind: 'quota_low' }));
    await expectError('POST', rules, 400, 'INVALID_JSON', body({ name: 'x', kind: 'quota_low', severity: 'high' }));
    await expectError('POST', rules, 400, 'INVALID_JSON', { body: '{"name":' });
    assert.equal(
      (await expectError('POST', rules, 400, 'INVALID_REQUEST', body({ name: 'x', kind: 'quota_low', threshold: 150 })))
        .param,
      'threshold',
    );
    assert.equal(
      (
        await expectError(
          'POST',
          rules,
          400,
          'INVALID_REQUEST',
          body({ name: 'x', kind: 'provider_incident', target: { accountId: 'acct_1' } }),
        )
      ).param,
      'target.accountId',
    );
    await expectError(
      'POST',
      rules,
      400,
      'INVALID_REQUEST',
      body({ name: 'x', kind: 'quota_low', target: { providerId: 'p'.repeat(161) } }),
    );
    await expectError(
      'POST',
      rules,
      400,
      'INVALID_REQUEST',
      body({ name: 'x', kind: 'quota_low', cooldownMinutes: -1 }),
    );
    await expectError(
      'POST',
      rules,
      400,
      'INVALID_REQUEST',
      body({ name: 'x', kind: 'quota_low', cooldownMinutes: 10_081 }),
    );
    await expectError('PATCH', `${rules}/arule_nope`, 404, 'NOT_FOUND', body({ enabled: false }));
    await expectError('PATCH', `${rules}/${'r'.repeat(161)}`, 400, 'INVALID_REQUEST', body({ enabled: false }));
    await expectError('DELETE', `${rules}/arule_nope`, 404, 'NOT_FOUND');
    await expectError('GET', `${rules}?limit=5`, 400, 'INVALID_REQUEST');
    for (const q of [
      'limit=0',
      'limit=201',
      'offset=-1',
      'offset=1000001',
      'state=open',
      'delivery=sent',
      'after=yesterday',
      'providerId=' + 'p'.repeat(161),
      'ruleId=',
      'page=2',
      'limit=1&limit=2',
    ]) {
      await expectError('GET', `/v1/gauge/alert-events?${q}`, 400, 'INVALID_REQUEST');
    }
    await expectError('PATCH', '/v1/gauge/alert-events/aevt_nope', 404, 'NOT_FOUND', body({ state: 'resolved' }));
    await expectError('PATCH', '/v1/gauge/alert-events/aevt_nope', 400, 'INVALID_REQUEST', body({}));
    await expectError('PATCH', '/v1/gauge/alert-events/aevt_nope', 400, 'INVALID_REQUEST', body({ state: 'firing' }));
    await expectError(
      'PATCH',
      '/v1/gauge/alert-events/aevt_nope',
      400,
      'INVALID_REQUEST',
      body({ delivery: 'pending' }),
    );
    await expectError(
      'PATCH',
      '/v1/gauge/alert-events/aevt_nope',
      400,
      'INVALID_JSON',
      body({ state: 'resolved', note: 'x' }),
    );
  });

  test('the events list answers enabled=false and nothing while Gauge is off', async () => {
    assert.deepEqual(await events(), { enabled: false, data: [], limit: 50, offset: 0, hasMore: false });
  });
});

describe('alert events from a real refresh', () => {
  let lowRule: string;
  let outRule: string;
  let lowEvent: string;

  test('a key limit below the quota_low threshold fires one event, deduplicated across refreshes', async () => {
    assert.equal((await svc.request('PATCH', '/v1/settings', body({ gauge: { enabled: true } }))).status, 200);
    const created = await svc.request(
      'POST',
      '/v1/gauge/accounts',
      body({ providerId: 'openrouter', authMode: 'api_key', credential: API_KEY, config: { baseUrl: fake.baseUrl } }),
    );
    assert.equal(created.status, 201, created.text);
    accountId = created.json.id;
    lowRule = (
      await svc.request(
        'POST',
        '/v1/gauge/alert-rules',
        body({
          name: 'Low',
          kind: 'quota_low',
          threshold: 10,
          target: { providerId: 'openrouter' },
          cooldownMinutes: 0,
        }),
      )
    ).json.id;
    await keyLeft(5);
    assert.deepEqual((await events()).data, [], '50% left');
    await keyLeft(0.5);
    await keyLeft(0.4);
    const page = await events();
    assert.equal(page.data.length, 1, JSON.stringify(page));
    const e = page.data[0];
    lowEvent = e.id;
    assert.deepEqual(
      { ...e, id: undefined, firedAt: undefined },
      {
        id: undefined,
        ruleId: lowRule,
        providerId: 'openrouter',
        accountId,
        state: 'firing',
        delivery: 'pending',
        summary: `openrouter ${accountId} key_limit: 5% left, below 10%`,
        dedupeKey: e.dedupeKey,
        firedAt: undefined,
        acknowledgedAt: null,
        resolvedAt: null,
        deliveredAt: null,
      },
    );
    assert.match(e.dedupeKey, new RegExp(`^${lowRule}\\|${accountId}\\|key_limit\\|\\d{4}-\\d{2}-01T00:00:00.000Z$`));
  });

  test('acknowledge, record delivery, then resolve; invalid moves are 400 naming the current state', async () => {
    const path = `/v1/gauge/alert-events/${lowEvent}`;
    const acked = await svc.request('PATCH', path, body({ state: 'acknowledged' }));
    assert.deepEqual(
      [acked.status, acked.json.state, typeof acked.json.acknowledgedAt],
      [200, 'acknowledged', 'string'],
    );
    assert.match(
      (await expectError('PATCH', path, 400, 'INVALID_REQUEST', body({ state: 'acknowledged' }))).message,
      /is `acknowledged`/,
    );
    const delivered = await svc.request('PATCH', path, body({ delivery: 'delivered' }));
    assert.deepEqual([delivered.json.delivery, typeof delivered.json.deliveredAt], ['delivered', 'string']);
    assert.equal(
      (await expectError('PATCH', path, 400, 'INVALID_REQUEST', body({ delivery: 'failed' }))).param,
      'delivery',
    );
    assert.deepEqual(
      (await events('?delivery=delivered')).data.map((x: { id: string }) => x.id),
      [lowEvent],
    );
    assert.deepEqual((await events('?delivery=pending')).data, []);
    const resolved = await svc.request('PATCH', path, body({ state: 'resolved' }));
    assert.deepEqual([resolved.json.state, typeof resolved.json.resolvedAt], ['resolved', 'string']);
    assert.match(
      (await expectError('PATCH', path, 400, 'INVALID_REQUEST', body({ state: 'resolved' }))).message,
      /is `resolved`/,
    );
  });

  test('firing -> resolved directly, and a quota that recovers resolves its event on its own', async () => {
    outRule = (
      await svc.request(
        'POST',
        '/v1/gauge/alert-rules',
        body({ name: 'Out', kind: 'quota_exhausted', cooldownMinutes: 0 }),
      )
    ).json.id;
    await keyLeft(0);
    const [out] = (await events(`?ruleId=${outRule}`)).data;
    assert.equal(out.state, 'firing');
    assert.equal(
      (
        await svc.request(
          'PATCH',
          `/v1/gauge/alert-events/${out.id}`,
          body({ state: 'resolved', delivery: 'suppressed' }),
        )
      ).json.state,
      'resolved',
    );
    // quota_low was resolved by hand while still low: quiet until the quota recovers, then a new episode.
    assert.equal((await events(`?ruleId=${lowRule}`)).data.length, 1);
    await keyLeft(9);
    await keyLeft(0.3);
    const low = (await events(`?ruleId=${lowRule}`)).data;
    assert.deepEqual(
      low.map((x: { state: string }) => x.state),
      ['firing', 'resolved'],
    );
    await keyLeft(9.9);
    assert.deepEqual(
      (await events(`?ruleId=${lowRule}&state=resolved`)).data.length,
      2,
      'recovered: resolved without a client',
    );
  });

  test('filters and paging; deleting a rule deletes only its events', async () => {
    const all = await events();
    assert.equal(all.data.length, 3);
    assert.deepEqual(
      all.data.map((x: { firedAt: string }) => x.firedAt),
      [...all.data.map((x: { firedAt: string }) => x.firedAt)].sort().reverse(),
      'newest first',
    );
    assert.equal((await events(`?accountId=${accountId}&providerId=openrouter`)).data.length, 3);
    assert.deepEqual((await events('?providerId=openai')).data, []);
    const page = await events('?limit=1&offset=1');
    assert.deepEqual([page.data.length, page.hasMore, page.data[0].id], [1, true, all.data[1].id]);
    assert.deepEqual(
      (await events('?before=2020-01-01T00:00:00Z')).data,
      [],
      'the default range ends 30 days before `before`',
    );
    assert.equal((await events('?after=2020-01-01T00:00:00Z')).data.length, 3);
    const deleted = await svc.request('DELETE', `/v1/gauge/alert-rules/${lowRule}`);
    assert.deepEqual(deleted.json, { id: lowRule, deleted: true, events: 2 });
    assert.deepEqual(
      (await events()).data.map((x: { ruleId: string }) => x.ruleId),
      [outRule],
    );
  });

  test('a scheduled collection fires its alert as soon as it ends, not at the next evaluation tick', async () => {
    const rule = (
      await svc.request(
        'POST',
        '/v1/gauge/alert-rules',
        body({
          name: 'Scheduled',
          kind: 'quota_low',
          threshold: 10,
          target: { providerId: 'openrouter' },
          cooldownMinutes: 0,
        }),
      )
    ).json.id;
    fake.setKey({
      limit: 10,
      limit_remaining: 0.5,
      limit_reset: 'monthly',
      usage: 9.5,
      usage_daily: 0,
      usage_weekly: 0,
      usage_monthly: 9.5,
    });
    const stream = await openLiveStream({
      port: svc.port,
      path: '/v1/events?types=gauge.alert',
      headers: { authorization: `Bearer ${svc.adminToken}` },
    });
    try {
      // Nobody asks for a refresh: the scheduler runs a new account's first collection 5 s after it appears.
      const created = await svc.request(
        'POST',
        '/v1/gauge/accounts',
        body({
          providerId: 'openrouter',
          authMode: 'api_key',
          credential: API_KEY,
          label: 'scheduled',
          config: { baseUrl: fake.baseUrl },
        }),
      );
      assert.equal(created.status, 201, created.text);
      const giveUp = new Promise<null>((r) => setTimeout(() => r(null), 30_000).unref());
      let fired: { accountId: string; ruleId: string; firedAt: string } | null = null;
      while (fired === null) {
        const next = await Promise.race([stream.next(), giveUp]);
        assert.ok(next !== null, 'no gauge.alert event within 30 s of the account');
        if (next.data.ruleId === rule && next.data.accountId === created.json.id) fired = next.data;
      }
      const diagnostics = (await svc.request('GET', '/v1/gauge/diagnostics')).json.data as {
        sourceId: string;
        lastRunAt: string;
      }[];
      const ran = Date.parse(diagnostics.find((d) => d.sourceId === created.json.id)!.lastRunAt);
      // The alerts' own timer ticks once a minute: an event fired by it would come up to 60 s after the run.
      const lag = Date.parse(fired.firedAt) - ran;
      assert.ok(lag >= 0 && lag < 5_000, `fired ${lag} ms after the run`);
    } finally {
      stream.close();
      fake.setKey({
        limit: 10,
        limit_remaining: 9,
        limit_reset: 'monthly',
        usage: 1,
        usage_daily: 0,
        usage_weekly: 0,
        usage_monthly: 1,
      });
    }
  });

  test('no credential appears in any answer or log line', () => {
    assert.ok(!svc.responsesText().includes(API_KEY));
    assert.ok(!svc.log().includes(API_KEY));
    assert.ok(svc.responsesText().includes('alert-rule'), 'the check read the answers');
  });
});

describe('budget thresholds', () => {
  // One call through each provider: OpenRouter reports its cost (0.002) and is estimated at 0.004 (1000 in,
  // 200 out at 2 and 10 per MTok); the styleB call reports none and is estimated at 0.00375 (1000 in, 50 out
  // at 3 and 15 per MTok).
  const counted = { provider_reported: 0.002, estimated: 0.00775 } as const;

  before(async () => {
    or.setModels([{ id: 'or-model' }]);
    or.setUsage({ inputTokens: 1000, cachedTokens: 0, outputTokens: 200, reasoningTokens: 0, costUsd: 0.002 });
    or.setOutput({ toolCalls: 'none' });
    an.setModels([{ id: 'claude-test' }]);
    an.setUsage({ inputTokens: 1000, cacheCreationTokens: 0, cachedTokens: 0, outputTokens: 50 });
    const post = async (path: string, b?: unknown, headers?: Record<string, string>) => {
      const reply = await svc.request('POST', path, {
        ...(b !== undefined && { body: b }),
        ...(headers && { headers }),
      });
      assert.equal(reply.status < 300, true, `${path}: ${reply.text}`);
    };
    for (const [kind, f, key] of [
      ['openrouter', or, OR_KEY],
      ['anthropic', an, AN_KEY],
    ] as const) {
      await post('/v1/providers', { kind, baseUrl: f.baseUrl, credential: key });
      await post(`/v1/providers/${kind}/actions/refresh-models`);
    }
    for (const [id, pricing] of [
      ['openrouter%2For-model', { inputPerMTok: 2, outputPerMTok: 10 }],
      ['anthropic%2Fclaude-test', { inputPerMTok: 3, outputPerMTok: 15 }],
    ] as const) {
      assert.equal((await svc.request('PATCH', `/v1/catalog/models/${id}`, body({ pricing }))).status, 200);
    }
    await post('/v1/chat/completions', { model: 'openrouter/or-model', messages: [{ role: 'user', content: 'hi' }] });
    await post(
      '/v1/messages',
      { model: 'anthropic/claude-test', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] },
      { 'anthropic-version': '2023-06-01' },
    );
    // The meter commits within a second of a call ending; nothing announces it, so this polls, bounded.
    const deadline = Date.now() + 10_000;
    while ((await svc.request('GET', '/v1/usage/summary')).json.totals.requests < 2 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 50));
  });

  test(
    'a budget across two providers, in both bases, crossing 50/80/100 fires exactly one event per threshold per ' +
      'period',
    async () => {
      const rule = (
        await svc.request(
          'POST',
          '/v1/gauge/alert-rules',
          body({ name: 'Budgets', kind: 'budget_threshold', cooldownMinutes: 0 }),
        )
      ).json.id;
      for (const basis of ['provider_reported', 'estimated'] as const) {
        const c = counted[basis];
        const made = await svc.request(
          'POST',
          '/v1/gauge/budgets',
          body({
            name: `team ${basis}`,
            amount: c * 4,
            period: 'month',
            basis,
            thresholds: [50, 80, 100],
            scope: { providerIds: ['openrouter', 'anthropic'] },
          }),
        );
        assert.equal(made.status, 201, made.text);
        assert.equal(made.json.spend.counted, c, made.text);
        // Each amount moves the counted share: 25%, 50%, 90%, 50% again, 100%, 100% again.
        for (const amount of [c * 2, c / 0.9, c * 2, c, c]) {
          assert.equal((await svc.request('PATCH', `/v1/gauge/budgets/${made.json.id}`, body({ amount }))).status, 200);
          await events();
        }
        const fired = (await events(`?ruleId=${rule}`)).data.filter((e: { dedupeKey: string }) =>
          e.dedupeKey.includes(`budget:${made.json.id}|`),
        );
        assert.deepEqual(
          fired.map((e: { dedupeKey: string; state: string }) => [e.dedupeKey.split('|')[2], e.state]),
          [
            ['100', 'firing'],
            ['80', 'firing'],
            ['50', 'firing'],
          ],
          basis,
        );
        assert.ok(
          fired.every((e: { dedupeKey: string }) => e.dedupeKey.endsWith(made.json.periodStart)),
          'the period start is part of the key',
        );
      }
    },
  );
});
