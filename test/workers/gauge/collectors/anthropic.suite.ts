import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { collector } from '../../../../workers/gauge/collectors/anthropic/index.ts';
import { startAnthropicGaugeFake, type AnthropicGaugeFake } from '../../../fakes/gauge/anthropic.ts';
import { closedPort, context, rejectsWith } from './helpers.ts';

const ADMIN_KEY = 'sk-ant-admin01-SENTINEL-abcdef0123456789';
const MONTH_END = '2026-12-01T00:00:00.000Z';

describe('gauge collector: anthropic', () => {
  let fake: AnthropicGaugeFake;

  before(async () => {
    fake = await startAnthropicGaugeFake({ adminKey: ADMIN_KEY });
  });
  after(() => fake.close());
  beforeEach(() => {
    fake.requests.length = 0;
    fake.setAnalytics(true);
    fake.setPageSize(0);
    fake.setDays([
      {
        day: '2026-10-30',
        uncached: 9e6,
        cacheWrite5m: 0,
        cacheWrite1h: 0,
        cacheRead: 0,
        output: 9e6,
        requests: 900,
        cents: 99_999,
      },
      {
        day: '2026-11-02',
        uncached: 1000,
        cacheWrite5m: 200,
        cacheWrite1h: 100,
        cacheRead: 700,
        output: 400,
        requests: 10,
        cents: 1234.5,
      },
      {
        day: '2026-11-24',
        uncached: 50,
        cacheWrite5m: 0,
        cacheWrite1h: 10,
        cacheRead: 40,
        output: 20,
        requests: 3,
        cents: 65.5,
      },
    ]);
    fake.setRateLimits([
      {
        groupType: 'model_group',
        displayName: 'Claude Sonnet 4.x',
        models: ['claude-sonnet-4-5', 'claude-sonnet-4-5-20250929'],
        limits: [
          { type: 'requests_per_minute', value: 4000 },
          { type: 'input_tokens_per_minute', value: 2_000_000 },
          { type: 'output_tokens_per_minute', value: 400_000 },
          { type: 'concurrent_sessions', value: 5 },
        ],
      },
      { groupType: 'batch', models: null, limits: [{ type: 'requests_per_minute', value: 1000 }] },
      { groupType: 'files', models: null, limits: [{ type: 'requests_per_minute', value: 100 }] },
      { groupType: 'web_search', models: null, limits: [{ type: 'requests_per_minute', value: 30 }] },
    ]);
  });

  const ctx = (signal?: AbortSignal) =>
    context({ credential: ADMIN_KEY, baseUrl: fake.baseUrl, ...(signal ? { signal } : {}) });
  const windows = async () => {
    const result = await collector.collect(ctx());
    assert.equal(result.readings.length, 1);
    const reading = result.readings[0]!;
    return { reading, byId: Object.fromEntries(reading.windows.map((w) => [w.id, w])) };
  };

  it(
    'reads the analytics API: month and day token and request windows, ceilings, spend from fractional ' + 'cents',
    async () => {
      const { reading, byId } = await windows();
      assert.equal(reading.providerId, 'anthropic');
      // Input counts uncached + both cache writes + cache reads: 2000 on the 2nd, 100 today.
      assert.deepEqual(byId['tokens.month'], {
        id: 'tokens.month',
        kind: 'tokens',
        period: 'month',
        used: 2520,
        limit: null,
        remaining: null,
        utilization: null,
        resetsAt: MONTH_END,
      });
      assert.equal(byId['input_tokens.month']?.used, 2100);
      assert.equal(byId['output_tokens.month']?.used, 420);
      assert.equal(byId['requests.month']?.used, 13);
      assert.equal(byId['tokens.day']?.used, 120);
      assert.equal(byId['requests.day']?.used, 3);
      assert.equal(byId['tokens.day']?.resetsAt, '2026-11-25T00:00:00.000Z');
      assert.deepEqual(byId['limit.claude-sonnet-4.x.requests_per_minute'], {
        id: 'limit.claude-sonnet-4.x.requests_per_minute',
        kind: 'requests',
        period: '1m',
        used: null,
        limit: 4000,
        remaining: null,
        utilization: null,
        resetsAt: null,
      });
      assert.equal(byId['limit.claude-sonnet-4.x.input_tokens_per_minute']?.kind, 'input_tokens');
      // The GA shape names each group's type in `group.type` only: batch, files and web search keep their own windows.
      assert.equal(byId['limit.batch.requests_per_minute']?.limit, 1000);
      assert.equal(byId['limit.files.requests_per_minute']?.limit, 100);
      assert.equal(byId['limit.web-search.requests_per_minute']?.limit, 30);
      assert.equal(byId['limit.group.requests_per_minute'], undefined);
      assert.equal(byId['limit.claude-sonnet-4.x.concurrent_sessions'], undefined);
      assert.deepEqual(reading.spend, {
        providerReported: 13,
        estimated: null,
        currency: 'USD',
        periodStart: '2026-11-01T00:00:00.000Z',
        periodEnd: MONTH_END,
      });
      assert.ok(!JSON.stringify(reading).includes('rlg_fake'), 'provider-side group IDs stay out of readings');
    },
  );

  it('sends the admin key, the version and, to the analytics API only, its beta header', async () => {
    await collector.collect(ctx());
    assert.deepEqual(
      fake.requests.map((r) => r.path),
      ['/v1/organizations/analytics/usage', '/v1/organizations/analytics/cost', '/v1/organizations/rate_limits'],
    );
    for (const req of fake.requests) {
      assert.equal(req.headers['x-api-key'], ADMIN_KEY);
      assert.equal(req.headers['anthropic-version'], '2023-06-01');
      assert.equal(req.headers['anthropic-beta'] !== undefined, req.path.includes('/analytics/'));
    }
    assert.equal(fake.requests[0]?.query.starting_at, '2026-11-01T00:00:00.000Z');
  });

  it(
    'falls back to the legacy reports on a 404, with the same totals and cents read from decimal ' + 'strings',
    async () => {
      fake.setAnalytics(false);
      const { reading, byId } = await windows();
      assert.equal(byId['tokens.month']?.used, 2520);
      assert.equal(byId['tokens.day']?.used, 120);
      assert.equal(byId['requests.month'], undefined, 'the legacy usage report has no request count');
      assert.equal(reading.spend?.providerReported, 13);
      assert.deepEqual(
        fake.requests.map((r) => r.path),
        [
          '/v1/organizations/analytics/usage',
          '/v1/organizations/usage_report/messages',
          '/v1/organizations/analytics/cost',
          '/v1/organizations/cost_report',
          '/v1/organizations/rate_limits',
        ],
      );
      assert.equal(fake.requests[1]?.query.bucket_width, '1d');
    },
  );

  it('follows next_page on every report', async () => {
    fake.setPageSize(1);
    const { reading, byId } = await windows();
    assert.equal(byId['tokens.month']?.used, 2520);
    assert.equal(reading.spend?.providerReported, 13);
    assert.equal(byId['limit.batch.requests_per_minute']?.limit, 1000);
    assert.equal(fake.requests.filter((r) => r.path.endsWith('/analytics/usage')).length, 2);
    assert.equal(
      fake.requests.filter((r) => r.path.endsWith('/rate_limits')).length,
      4,
      'one page per rate-limit group',
    );
  });

  it('still reads the deprecated top-level group_type of the shape before the GA group object', async () => {
    fake.setRateLimits([
      {
        groupType: 'batch',
        models: ['claude-sonnet-4-5'],
        legacyGroupType: true,
        limits: [{ type: 'requests_per_minute', value: 7 }],
      },
    ]);
    const { byId } = await windows();
    assert.equal(byId['limit.batch.requests_per_minute']?.limit, 7);
  });

  it('collects without ceilings where the rate-limits endpoint is absent', async () => {
    fake.setRateLimits(null);
    const { byId } = await windows();
    assert.equal(byId['tokens.month']?.used, 2520);
    assert.ok(Object.keys(byId).every((id) => !id.startsWith('limit.')));
  });

  it(
    'maps a wrong key to auth_failed, 429 to rate_limited with Retry-After, 500 (no fallback) to ' + 'upstream_error',
    async () => {
      await rejectsWith(
        collector.collect(context({ credential: 'sk-ant-admin01-WRONG-SENTINEL', baseUrl: fake.baseUrl })),
        'auth_failed',
        ['WRONG-SENTINEL', 'invalid x-api-key'],
      );
      fake.failNext(
        429,
        {
          type: 'error',
          error: { type: 'rate_limit_error', message: 'Number of requests has exceeded your rate limit' },
        },
        { 'retry-after': '7' },
      );
      assert.equal(
        (await rejectsWith(collector.collect(ctx()), 'rate_limited', [ADMIN_KEY, 'exceeded'])).retryAfterMs,
        7000,
      );
      fake.requests.length = 0;
      fake.failNext(500, { type: 'error', error: { type: 'api_error', message: 'Internal server error' } });
      await rejectsWith(collector.collect(ctx()), 'upstream_error', [ADMIN_KEY]);
      assert.equal(fake.requests.length, 1, 'a 500 is not a reason to try the legacy reports');
      fake.failNext(529, { type: 'error', error: { type: 'overloaded_error', message: 'Overloaded' } });
      await rejectsWith(collector.collect(ctx()), 'upstream_error', [ADMIN_KEY]);
    },
  );

  it('maps a body that is not JSON, and rows of the wrong shape, to malformed', async () => {
    fake.malformedNext();
    await rejectsWith(collector.collect(ctx()), 'malformed', [ADMIN_KEY]);
    fake.failNext(200, { data: [{ starting_at: 'not a date', usage: {} }], has_more: false, next_page: null });
    await rejectsWith(collector.collect(ctx()), 'malformed', []);
    fake.failNext(200, {
      data: [{ starting_at: '2026-11-02T00:00:00Z', usage: { output_tokens: '12' } }],
      has_more: false,
      next_page: null,
    });
    await rejectsWith(collector.collect(ctx()), 'malformed', []);
    fake.failNext(200, { data: [], has_more: true, next_page: null });
    await rejectsWith(collector.collect(ctx()), 'malformed', []);
  });

  it('ends a hung request on abort as timeout, and a closed port as unreachable', async () => {
    fake.hangNext();
    const controller = new AbortController();
    const pending = collector.collect(ctx(controller.signal));
    await fake.whenConcurrent(1);
    controller.abort();
    await rejectsWith(pending, 'timeout', [ADMIN_KEY]);
    const port = await closedPort();
    await rejectsWith(
      collector.collect(context({ credential: ADMIN_KEY, baseUrl: `http://127.0.0.1:${port}` })),
      'unreachable',
      [ADMIN_KEY],
    );
  });
});
