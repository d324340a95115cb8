import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { collector } from '../../../../workers/gauge/collectors/openrouter/index.ts';
import { startOpenRouterGaugeFake, type OpenRouterGaugeFake } from '../../../fakes/gauge/openrouter.ts';
import { closedPort, context, rejectsWith } from './helpers.ts';

const API_KEY = 'sk-or-v1-SENTINEL-inference-0123456789';
const MANAGEMENT_KEY = 'sk-or-v1-SENTINEL-management-abcdef';

// NOW is Tuesday 2026-11-24 15:00 UTC: the day resets at midnight, the week on Monday 30 November.
const DAY_END = '2026-11-25T00:00:00.000Z';
const WEEK_END = '2026-11-30T00:00:00.000Z';
const MONTH_END = '2026-12-01T00:00:00.000Z';

describe('gauge collector: openrouter', () => {
  let fake: OpenRouterGaugeFake;

  before(async () => {
    fake = await startOpenRouterGaugeFake({ apiKey: API_KEY, managementKey: MANAGEMENT_KEY });
  });
  after(() => fake.close());
  beforeEach(() => {
    fake.requests.length = 0;
    fake.setKey({
      limit: 100,
      limit_remaining: 74.5,
      limit_reset: 'monthly',
      usage: 310.25,
      usage_daily: 1.5,
      usage_weekly: 9.25,
      usage_monthly: 25.5,
    });
    fake.setCredits(150.5, 120.25);
  });

  const collect = (credential: string, signal?: AbortSignal) =>
    collector.collect(context({ credential, baseUrl: fake.baseUrl, ...(signal ? { signal } : {}) }));

  it('turns the key into a limit window, day/week/month spend windows and the month spend', async () => {
    const [reading] = (await collect(API_KEY)).readings;
    assert.ok(reading);
    assert.equal(reading.providerId, 'openrouter');
    const byId = Object.fromEntries(reading.windows.map((w) => [w.id, w]));
    assert.deepEqual(byId.key_limit, {
      id: 'key_limit',
      kind: 'spend',
      period: 'month',
      used: 25.5,
      limit: 100,
      remaining: 74.5,
      utilization: 0.255,
      resetsAt: MONTH_END,
    });
    assert.deepEqual(byId['spend.day'], {
      id: 'spend.day',
      kind: 'spend',
      period: '1d',
      used: 1.5,
      limit: null,
      remaining: null,
      utilization: null,
      resetsAt: DAY_END,
    });
    assert.equal(byId['spend.week']?.used, 9.25);
    assert.equal(byId['spend.week']?.resetsAt, WEEK_END);
    assert.equal(byId['spend.month']?.resetsAt, MONTH_END);
    assert.deepEqual(reading.spend, {
      providerReported: 25.5,
      estimated: null,
      currency: 'USD',
      periodStart: '2026-11-01T00:00:00.000Z',
      periodEnd: MONTH_END,
    });
    assert.ok(!JSON.stringify(reading).includes('user_2dHF'), 'the creator ID stays out of the reading');
    assert.equal((await collect(API_KEY)).identity, 'user_2dHFtVWx2n56w6HkM0000000000');
  });

  it("leaves credits unknown for an inference key (the credits endpoint's 403 is not a failure)", async () => {
    const [reading] = (await collect(API_KEY)).readings;
    assert.equal(reading?.credits, null);
    assert.deepEqual(
      fake.requests.map((r) => [r.path, r.headers.authorization]),
      [
        ['/api/v1/key', `Bearer ${API_KEY}`],
        ['/api/v1/credits', `Bearer ${API_KEY}`],
      ],
    );
  });

  it('reads the credit balance with a management key', async () => {
    const [reading] = (await collect(MANAGEMENT_KEY)).readings;
    assert.deepEqual(reading?.credits, { remaining: 30.25, total: 150.5, currency: 'USD' });
  });

  it('a key without a limit has no limit window; a weekly limit resets on Monday', async () => {
    fake.setKey({
      limit: null,
      limit_remaining: null,
      limit_reset: null,
      usage: 3,
      usage_daily: 1,
      usage_weekly: 2,
      usage_monthly: 3,
    });
    let [reading] = (await collect(API_KEY)).readings;
    assert.equal(
      reading?.windows.find((w) => w.id === 'key_limit'),
      undefined,
    );
    fake.setKey({
      limit: 10,
      limit_remaining: 8,
      limit_reset: 'weekly',
      usage: 40,
      usage_daily: 1,
      usage_weekly: 2,
      usage_monthly: 3,
    });
    [reading] = (await collect(API_KEY)).readings;
    assert.deepEqual(
      reading?.windows.find((w) => w.id === 'key_limit'),
      {
        id: 'key_limit',
        kind: 'spend',
        period: '7d',
        used: 2,
        limit: 10,
        remaining: 8,
        utilization: 0.2,
        resetsAt: WEEK_END,
      },
    );
  });

  it(
    'maps a wrong key to auth_failed, 429 to rate_limited, 500 to upstream_error, a non-JSON body to ' + 'malformed',
    async () => {
      await rejectsWith(collect('sk-or-v1-WRONG-SENTINEL'), 'auth_failed', ['WRONG-SENTINEL', 'User not found']);
      fake.failNext(429, { error: { code: 429, message: 'Rate limit exceeded' } }, { 'retry-after': '12' });
      assert.equal((await rejectsWith(collect(API_KEY), 'rate_limited', [API_KEY])).retryAfterMs, 12_000);
      fake.failNext(500, { error: { code: 500, message: 'Internal Server Error' } });
      await rejectsWith(collect(API_KEY), 'upstream_error', [API_KEY]);
      fake.malformedNext();
      await rejectsWith(collect(API_KEY), 'malformed', [API_KEY]);
      fake.failNext(200, { data: { limit: 'ten', usage: 1 } });
      await rejectsWith(collect(API_KEY), 'malformed', [API_KEY]);
    },
  );

  it('a failure of the credits endpoint other than 403 fails the collection', async () => {
    fake.requests.length = 0;
    fake.failNextAt('/api/v1/credits', 500, { error: { code: 500, message: 'Internal Server Error' } });
    await rejectsWith(collect(MANAGEMENT_KEY), 'upstream_error', [MANAGEMENT_KEY]);
    assert.deepEqual(
      fake.requests.map((r) => r.path),
      ['/api/v1/key', '/api/v1/credits'],
    );
  });

  it('ends a hung request on abort as timeout, and a closed port as unreachable', async () => {
    fake.hangNext();
    const controller = new AbortController();
    const pending = collect(API_KEY, controller.signal);
    await fake.whenConcurrent(1);
    controller.abort();
    await rejectsWith(pending, 'timeout', [API_KEY]);
    const port = await closedPort();
    await rejectsWith(
      collector.collect(context({ credential: API_KEY, baseUrl: `http://127.0.0.1:${port}/api/v1` })),
      'unreachable',
      [API_KEY],
    );
  });
});
