import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startOpenRouterGaugeFake, type FakeKeyData, type OpenRouterGaugeFake } from '../fakes/gauge/openrouter.ts';
import * as openaiFake from '../fakes/openai.ts';
import {
  claudeAssistant,
  codexMeta,
  codexTokenCount,
  codexTurn,
  removeTrees,
  tempTree,
  writeLog,
} from '../helpers/agent-logs.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// Activity, capacity and recommendations end to end on one service: generated Claude Code and Codex logs read by
// a refresh come back as the hand-computed hourly buckets at the hour boundaries; the capacity route follows the
// opt-in; Smart Route's capacity strategy steers away from the route whose OpenRouter account a Gauge reading
// shows exhausted, and back once a new reading has headroom again; every query's bad input is a 400.

const H = 3_600_000;
const KEY = `or-key-${process.pid}`;
const GAUGE_KEY = `sk-or-v1-gauge-${process.pid}`;
// Three whole hours that end an hour before now: inside the default 30 days, and the files are recent.
const H0 = Math.floor(Date.now() / H) * H - 4 * H;
const iso = (ms: number) => new Date(ms).toISOString();
const CWD = '/srv/work/app';

let svc: InProcessService;
let oa: openaiFake.OpenAIFake;
let or: openaiFake.OpenAIFake;
let gaugeOr: OpenRouterGaugeFake;
let accountId: string;
let second: string;
const dirs: string[] = [];

const key = (remaining: number): FakeKeyData => ({
  limit: 10,
  limit_remaining: remaining,
  limit_reset: 'monthly',
  usage: 10 - remaining,
  usage_daily: 0,
  usage_weekly: 0,
  usage_monthly: 10 - remaining,
});
const ok = async (method: string, path: string, body?: unknown) => {
  const reply = await svc.request(method, path, body === undefined ? {} : { body });
  assert.ok(reply.status < 300, `${method} ${path}: ${reply.status} ${reply.text}`);
  return reply.json;
};
const refresh = async (sourceIds: string[]) => {
  const outcomes = (await ok('POST', '/v1/gauge/refresh', { sourceIds })).data;
  assert.ok(
    outcomes.every((o: { ok: boolean }) => o.ok),
    JSON.stringify(outcomes),
  );
};

before(async () => {
  const claudeRoot = join(tempTree(dirs, 'g6-claude'), 'projects');
  const codexRoot = join(tempTree(dirs, 'g6-codex'), 'sessions');
  const usage = (input: number, output: number, cacheRead: number, cacheWrite: number) => ({
    input,
    output,
    cacheRead,
    cacheWrite,
  });
  const msg = (id: string, at: number, session: string, u: ReturnType<typeof usage>) =>
    claudeAssistant({
      id,
      requestId: `req_${id}`,
      uuid: `u-${id}`,
      model: 'claude-sonnet-4-5',
      at: iso(at),
      session,
      cwd: CWD,
      usage: u,
    });
  writeLog(
    join(claudeRoot, '-srv-work-app', 's1.jsonl'),
    [
      msg('m1', H0 + H - 1, 's1', usage(10, 20, 100, 5)),
      msg('m2', H0 + H, 's1', usage(1, 2, 3, 0)),
      msg('m3', H0 + H + 30 * 60_000, 's1', usage(4, 5, 6, 7)),
    ],
    Date.now(),
  );
  writeLog(join(claudeRoot, '-srv-work-app', 's2.jsonl'), [msg('m4', H0 + 2 * H, 's2', usage(8, 9, 0, 0))], Date.now());
  const tokens = (input: number, cached: number, output: number, reasoning: number) => ({
    input,
    cached,
    output,
    reasoning,
  });
  writeLog(
    join(codexRoot, '2026', '11', '24', 'rollout-g6.jsonl'),
    [
      codexMeta({ id: 'cx-1', at: iso(H0 + H), cwd: CWD }),
      codexTurn({ at: iso(H0 + H), model: 'gpt-5-codex', cwd: CWD }),
      codexTokenCount({ at: iso(H0 + 2 * H - 1), last: tokens(100, 40, 30, 10), total: tokens(100, 40, 30, 10) }),
      codexTokenCount({ at: iso(H0 + 2 * H), last: tokens(50, 0, 5, 0), total: tokens(150, 40, 35, 10) }),
    ],
    Date.now(),
  );

  oa = await openaiFake.start({ apiKey: KEY });
  or = await openaiFake.start({ flavour: 'openrouter', apiKey: KEY });
  oa.setModels([{ id: 'gpt-test' }]);
  or.setModels([{ id: 'openai/gpt-test' }]);
  gaugeOr = await startOpenRouterGaugeFake({ apiKey: GAUGE_KEY, managementKey: `${GAUGE_KEY}-mgmt` });
  gaugeOr.setKey(key(10));
  svc = await startInProcess({ env: { SWITCHYARD_GAUGE_ALLOWED_HOSTS: 'loopback' } });

  for (const [id, kind, fake] of [
    ['pa', 'openai', oa],
    ['por', 'openrouter', or],
  ] as const) {
    await ok('POST', '/v1/providers', { id, kind, baseUrl: fake.baseUrl, credential: KEY });
    await ok('POST', `/v1/providers/${id}/actions/refresh-models`);
  }
  await ok('POST', '/v1/route-packs', {
    slug: 'cap',
    strategy: 'capacity',
    routes: [
      { id: 'or', model: 'por/openai/gpt-test' },
      { id: 'oa', model: 'pa/gpt-test' },
    ],
    fallback: { model: 'pa/gpt-test' },
  });
  accountId = (
    await ok('POST', '/v1/gauge/accounts', {
      providerId: 'openrouter',
      authMode: 'api_key',
      credential: GAUGE_KEY,
      config: { baseUrl: gaugeOr.baseUrl },
    })
  ).id;
  await ok('PUT', '/v1/gauge/sources/claude-code', { enabled: true, config: { paths: [claudeRoot] } });
  await ok('PUT', '/v1/gauge/sources/codex', { enabled: true, config: { paths: [codexRoot] } });
});
after(async () => {
  await svc.stop();
  await Promise.all([oa.close(), or.close(), gaugeOr.close()]);
  removeTrees(dirs);
});

const setGauge = (enabled: boolean) => ok('PATCH', '/v1/settings', { gauge: { enabled } });
const bad = async (path: string, param: string) => {
  const reply = await svc.request('GET', path);
  assert.equal(reply.status, 400, `${path}: ${reply.text}`);
  assert.equal(reply.json.error.code, 'INVALID_REQUEST', path);
  assert.equal(reply.json.error.param, param, path);
};

describe('while opted out', () => {
  test('activity and capacity answer enabled=false and nothing; recommendations are 409 GAUGE_DISABLED', async () => {
    const activity = await ok('GET', '/v1/gauge/activity');
    assert.equal(activity.enabled, false);
    assert.deepEqual(activity.data, []);
    assert.deepEqual(await ok('GET', '/v1/gauge/capacity'), { enabled: false, data: [] });
    const rec = await svc.request('GET', `/v1/gauge/recommendations?accountId=${accountId}`);
    assert.equal(rec.status, 409);
    assert.equal(rec.json.error.code, 'GAUGE_DISABLED');
  });
});

describe('activity from generated agent logs', () => {
  const page = async (query: string) =>
    (await ok('GET', `/v1/gauge/activity?${query}`)).data.map((b: Record<string, unknown>) => [
      b.hour,
      b.sourceId,
      b.session,
      b.requests,
      b.inputTokens,
      b.outputTokens,
      b.cacheReadTokens,
      b.cacheWriteTokens,
      b.reasoningTokens,
    ]);
  const claude = (hour: number, session: string, r: number, i: number, o: number, cr: number, cw: number) => [
    iso(H0 + hour * H),
    'claude-code',
    session,
    r,
    i,
    o,
    cr,
    cw,
    0,
  ];
  const codex = (hour: number, r: number, i: number, o: number, cr: number, reasoning: number) => [
    iso(H0 + hour * H),
    'codex',
    'cx-1',
    r,
    i,
    o,
    cr,
    0,
    reasoning,
  ];

  before(async () => {
    await setGauge(true);
    await refresh(['claude-code', 'codex']);
  });

  test('[after, before) on exact hour boundaries selects only the hour between them', async () => {
    const after = encodeURIComponent(iso(H0 + H));
    const before = encodeURIComponent(iso(H0 + 2 * H));
    assert.deepEqual(await page(`after=${after}&before=${before}`), [
      codex(1, 1, 60, 30, 40, 10),
      claude(1, 's1', 2, 5, 7, 9, 7),
    ]);
  });

  test('a millisecond wider on each side takes in the neighbouring hours, newest first', async () => {
    const after = encodeURIComponent(iso(H0 + H - 1));
    const before = encodeURIComponent(iso(H0 + 2 * H + 1));
    assert.deepEqual(await page(`after=${after}&before=${before}`), [
      codex(2, 1, 50, 5, 0, 0),
      claude(2, 's2', 1, 8, 9, 0, 0),
      codex(1, 1, 60, 30, 40, 10),
      claude(1, 's1', 2, 5, 7, 9, 7),
      claude(0, 's1', 1, 10, 20, 100, 5),
    ]);
  });

  test('filters, paging and labels: no path of the working directory is stored', async () => {
    assert.deepEqual(await page('source=local_logs&providerId=codex&model=gpt-5-codex'), [
      codex(2, 1, 50, 5, 0, 0),
      codex(1, 1, 60, 30, 40, 10),
    ]);
    assert.deepEqual(await page('session=s2&project=app'), [claude(2, 's2', 1, 8, 9, 0, 0)]);
    assert.deepEqual(await page('accountId=claude-code&sourceId=codex'), []);
    const first = await ok('GET', '/v1/gauge/activity?sourceId=claude-code&limit=2&offset=1');
    assert.deepEqual([first.data.length, first.hasMore, first.limit, first.offset], [2, false, 2, 1]);
    const all = await ok('GET', '/v1/gauge/activity');
    assert.ok(!JSON.stringify(all).includes('/srv/work'), 'the working directory never reaches storage');
    const workspace = all.data.find((b: { sourceId: string }) => b.sourceId === 'claude-code').workspace;
    assert.match(workspace, /^w-/);
    assert.equal((await page(`workspace=${workspace}&sourceId=claude-code`)).length, 3);
    // The default range is the trailing 30 days.
    assert.equal(Date.parse(all.before) - Date.parse(all.after), 30 * 24 * H);
  });

  test('bad input: every query parameter', async () => {
    await bad('/v1/gauge/activity?after=2026-01-01&before=2026-01-02T00:00:00Z', 'after');
    await bad(`/v1/gauge/activity?before=${iso(H0)}&after=${iso(H0)}`, 'after');
    await bad('/v1/gauge/activity?after=2025-01-01T00:00:00Z&before=2026-01-02T00:00:01Z', 'before');
    await bad('/v1/gauge/activity?limit=0', 'limit');
    await bad('/v1/gauge/activity?limit=201', 'limit');
    await bad('/v1/gauge/activity?offset=-1', 'offset');
    await bad('/v1/gauge/activity?source=files', 'source');
    await bad(`/v1/gauge/activity?sourceId=${'s'.repeat(161)}`, 'sourceId');
    await bad(`/v1/gauge/activity?workspace=${'w'.repeat(321)}`, 'workspace');
    await bad('/v1/gauge/activity?model=', 'model');
    await bad('/v1/gauge/activity?session=a&session=b', 'session');
    await bad('/v1/gauge/activity?tenant=x', 'tenant');
    await bad('/v1/gauge/capacity?accountId=x', 'accountId');
    await bad('/v1/gauge/recommendations', 'accountId');
    await bad(`/v1/gauge/recommendations?accountId=${accountId}&durationSeconds=299`, 'durationSeconds');
    await bad(`/v1/gauge/recommendations?accountId=${accountId}&durationSeconds=604801`, 'durationSeconds');
    await bad(`/v1/gauge/recommendations?accountId=${accountId}&durationSeconds=1.5`, 'durationSeconds');
    await bad(`/v1/gauge/recommendations?accountId=${accountId}&model=${'m'.repeat(321)}`, 'model');
    const unknown = await svc.request('GET', '/v1/gauge/recommendations?accountId=acct_nope');
    assert.equal(unknown.status, 404);
    assert.equal(unknown.json.error.param, 'accountId');
    const source = await svc.request('GET', '/v1/gauge/recommendations?accountId=status-openai');
    assert.equal(source.status, 404, 'a status page is a source, not an account');
  });
});

describe('capacity: one signal for the route and Smart Route', () => {
  const first = async () =>
    (await ok('GET', '/v1/route-packs/cap/decision')).candidates.find(
      (c: { attempt: number | null }) => c.attempt === 1,
    ).routeId;
  const requestIds: string[] = [];
  const callsFrom = Date.now();
  const chatGoesTo = async () => {
    const [oaBefore, orBefore] = [oa.requests.length, or.requests.length];
    const reply = await svc.request('POST', '/v1/chat/completions', {
      body: { model: '@route/cap', messages: [{ role: 'user', content: 'hi' }] },
    });
    assert.equal(reply.status, 200, reply.text);
    requestIds.push(reply.headers['x-request-id']!);
    return oa.requests.length > oaBefore ? 'oa' : or.requests.length > orBefore ? 'or' : 'none';
  };

  test(
    'an exhausted OpenRouter account steers the capacity pack to the other route, and a reset steers it ' + 'back',
    async () => {
      await setGauge(true);
      assert.equal(await first(), 'or', 'no reading: pack order');
      gaugeOr.setKey(key(0));
      await refresh([accountId]);
      const cap = await ok('GET', '/v1/gauge/capacity');
      const row = cap.data.find((r: { accountId: string }) => r.accountId === accountId);
      assert.deepEqual(
        [row.providerId, row.model, row.headroom, row.status, row.source],
        ['openrouter', null, 0, 'exhausted', 'polled'],
      );
      assert.equal(await first(), 'oa');
      assert.equal(await chatGoesTo(), 'oa');

      gaugeOr.setKey(key(10));
      await refresh([accountId]);
      assert.equal(await first(), 'or');
      assert.equal(await chatGoesTo(), 'or');
      const live = (await ok('GET', '/v1/gauge/capacity')).data.filter(
        (r: { model: string | null }) => r.model !== null,
      );
      assert.ok(
        live.some(
          (r: { accountId: string; recentRateLimitedShare: number }) =>
            r.accountId === 'live-headers.por' && r.recentRateLimitedShare === 0,
        ),
        JSON.stringify(live),
      );
    },
  );

  test("the service's own calls are hourly `service` buckets of the catalog models that answered", async () => {
    // The usage log line is written in the same turn the call is folded into its bucket.
    for (const id of requestIds) await svc.waitForLog((l) => l.msg === 'usage' && l.reqId === id);
    const rows: Record<string, any>[] = (await ok('GET', '/v1/gauge/activity?source=service')).data;
    // The calls ended between the start of this describe and now: an hour boundary may fall between them.
    const hours = new Set([iso(Math.floor(callsFrom / H) * H), iso(Math.floor(Date.now() / H) * H)]);
    assert.ok(
      rows.every(
        (b) => hours.has(b.hour) && b.accountId === 'service' && b.providerId === 'service' && b.session === null,
      ),
      JSON.stringify(rows),
    );
    const perModel = (model: string) => rows.filter((b) => b.model === model).reduce((n, b) => n + b.requests, 0);
    assert.deepEqual([perModel('pa/gpt-test'), perModel('por/openai/gpt-test'), rows.length <= 4], [1, 1, true]);
  });

  test('recommendations: advisory, from cached readings, with candidates that serve the model', async () => {
    const rec = await ok('GET', `/v1/gauge/recommendations?accountId=${accountId}&model=gpt-test&durationSeconds=7200`);
    assert.equal(rec.advisory, true);
    assert.equal(rec.durationSeconds, 7200);
    assert.equal(rec.window.id, 'key_limit');
    // One reading of this month's window so far: no burn rate yet.
    assert.deepEqual(
      [rec.verdict, rec.confidence, rec.window.remaining, rec.window.limit, rec.burnRatePerHour],
      ['unknown', 'low', 10, 10, null],
    );
    assert.deepEqual(rec.candidates, [], 'no other connected account serves it yet');
    second = (
      await ok('POST', '/v1/gauge/accounts', {
        providerId: 'openrouter',
        authMode: 'api_key',
        credential: `${GAUGE_KEY}-mgmt`,
        config: { baseUrl: gaugeOr.baseUrl },
      })
    ).id;
    await refresh([second]);
    const withSecond = await ok('GET', `/v1/gauge/recommendations?accountId=${accountId}&model=gpt-test`);
    assert.deepEqual(
      withSecond.candidates.map((c: Record<string, unknown>) => [c.accountId, c.providerId, c.headroom, c.status]),
      [[second, 'openrouter', 1, 'ok']],
    );
    const otherModel = await ok('GET', `/v1/gauge/recommendations?accountId=${accountId}&model=claude-sonnet-4-5`);
    assert.deepEqual(otherModel.candidates, [], 'no catalog provider of its kind serves that model');
    const before = gaugeOr.requests.length;
    await ok('GET', `/v1/gauge/recommendations?accountId=${accountId}`);
    assert.equal(gaugeOr.requests.length, before, 'no collector call');
    // Claude Code's account has token windows but no limits: unknown, and nothing else serves its model here.
    const cc = await ok('GET', '/v1/gauge/recommendations?accountId=claude-code&model=claude-sonnet-4-5');
    assert.deepEqual([cc.verdict, cc.candidates], ['unknown', []]);
  });

  test('opted out again: capacity is empty and the exhausted reading no longer steers', async () => {
    gaugeOr.setKey(key(0));
    await refresh([accountId]);
    assert.equal(
      await first(),
      'or',
      'the second account of the kind still has headroom: no evidence against the route',
    );
    await refresh([second]);
    assert.equal(await first(), 'oa');
    await setGauge(false);
    assert.deepEqual(await ok('GET', '/v1/gauge/capacity'), { enabled: false, data: [] });
    assert.equal(await first(), 'or');
  });
});
