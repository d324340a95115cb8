import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { collector } from '../../../../workers/gauge/collectors/openai/index.ts';
import { startOpenAIGaugeFake, type OpenAIGaugeFake } from '../../../fakes/gauge/openai.ts';
import { closedPort, context, NOW, rejectsWith, unixSeconds } from './helpers.ts';

const ADMIN_KEY = 'sk-admin-SENTINEL-0123456789abcdef';

describe('gauge collector: openai', () => {
  let fake: OpenAIGaugeFake;

  before(async () => {
    fake = await startOpenAIGaugeFake({ adminKey: ADMIN_KEY });
  });
  after(() => fake.close());
  beforeEach(() => {
    fake.setPageSize(0);
    fake.setEndless(false);
    fake.requests.length = 0;
    // October's bucket lies before the month: the collector must ask from 1 November and never count it.
    fake.setUsage([
      {
        startTime: unixSeconds('2026-10-31T00:00:00Z'),
        results: [{ input_tokens: 999_999, output_tokens: 999_999, num_model_requests: 999 }],
      },
      {
        startTime: unixSeconds('2026-11-01T00:00:00Z'),
        results: [{ input_tokens: 1000, output_tokens: 500, input_cached_tokens: 800, num_model_requests: 5 }],
      },
      {
        startTime: unixSeconds('2026-11-10T00:00:00Z'),
        results: [{ input_tokens: 2000, output_tokens: 700, num_model_requests: 7 }],
      },
      {
        startTime: unixSeconds('2026-11-24T00:00:00Z'),
        results: [{ input_tokens: 300, output_tokens: 40, num_model_requests: 2 }],
      },
    ]);
    fake.setCosts([
      { startTime: unixSeconds('2026-10-31T00:00:00Z'), results: [{ value: 50 }] },
      { startTime: unixSeconds('2026-11-01T00:00:00Z'), results: [{ value: 0.06 }] },
      { startTime: unixSeconds('2026-11-10T00:00:00Z'), results: [{ value: 1.25 }] },
      { startTime: unixSeconds('2026-11-24T00:00:00Z'), results: [{ value: 0.19 }] },
    ]);
  });

  const ctx = (signal?: AbortSignal) =>
    context({ credential: ADMIN_KEY, baseUrl: fake.baseUrl, ...(signal ? { signal } : {}) });

  it('turns the month of usage and cost buckets into month and day windows and the month spend', async () => {
    const result = await collector.collect(ctx());
    assert.equal(result.readings.length, 1);
    const [reading] = result.readings;
    assert.ok(reading);
    assert.equal(reading.accountId, 'acct_local_1');
    assert.equal(reading.providerId, 'openai');
    assert.equal(reading.source, 'polled');
    assert.equal(reading.collectedAt, NOW.toISOString());
    const byId = Object.fromEntries(reading.windows.map((w) => [w.id, w]));
    const month = '2026-12-01T00:00:00.000Z';
    const day = '2026-11-25T00:00:00.000Z';
    assert.deepEqual(byId['tokens.month'], {
      id: 'tokens.month',
      kind: 'tokens',
      period: 'month',
      used: 4540,
      limit: null,
      remaining: null,
      utilization: null,
      resetsAt: month,
    });
    assert.equal(byId['input_tokens.month']?.used, 3300);
    assert.equal(byId['output_tokens.month']?.used, 1240);
    assert.equal(byId['requests.month']?.used, 14);
    assert.deepEqual(byId['tokens.day'], {
      id: 'tokens.day',
      kind: 'tokens',
      period: '1d',
      used: 340,
      limit: null,
      remaining: null,
      utilization: null,
      resetsAt: day,
    });
    assert.equal(byId['requests.day']?.used, 2);
    assert.deepEqual(reading.spend, {
      providerReported: 1.5,
      estimated: null,
      currency: 'USD',
      periodStart: '2026-11-01T00:00:00.000Z',
      periodEnd: month,
    });
    assert.equal(reading.credits, null);
  });

  it(
    'asks both reports from the start of the UTC month in 1d buckets, with the admin key as a Bearer ' + 'token',
    async () => {
      await collector.collect(ctx());
      assert.deepEqual(
        fake.requests.map((r) => r.path),
        ['/v1/organization/usage/completions', '/v1/organization/costs'],
      );
      for (const req of fake.requests) {
        assert.equal(req.query.start_time, String(unixSeconds('2026-11-01T00:00:00Z')));
        assert.equal(req.query.bucket_width, '1d');
        assert.equal(req.headers.authorization, `Bearer ${ADMIN_KEY}`);
      }
    },
  );

  it('follows next_page until has_more is false and sums every page', async () => {
    fake.setPageSize(1);
    const [reading] = (await collector.collect(ctx())).readings;
    assert.equal(reading?.windows.find((w) => w.id === 'tokens.month')?.used, 4540);
    assert.equal(reading?.spend?.providerReported, 1.5);
    const usagePages = fake.requests.filter((r) => r.path.endsWith('/completions'));
    assert.equal(usagePages.length, 3);
    assert.equal(usagePages[0]?.query.page, undefined);
    assert.ok(usagePages[1]?.query.page);
  });

  it('stops a cursor that never ends after a bounded number of pages, as malformed', async () => {
    fake.setPageSize(1);
    fake.setEndless(true);
    await rejectsWith(collector.collect(ctx()), 'malformed', [ADMIN_KEY]);
    assert.equal(fake.requests.length, 12);
  });

  it('reports a refused key as auth_failed without the key or what OpenAI said', async () => {
    const err = await rejectsWith(
      collector.collect(context({ credential: 'sk-admin-WRONG-SENTINEL-9999', baseUrl: fake.baseUrl })),
      'auth_failed',
      ['sk-admin-WRONG', 'SENTINEL', '9999', 'Incorrect API key'],
    );
    assert.equal(err.upstreamStatus, 401);
  });

  it('reports 429 as rate_limited with Retry-After in seconds or as an HTTP date', async () => {
    fake.failNext(
      429,
      { error: { message: `Rate limit reached for ${ADMIN_KEY}`, type: 'requests', code: 'rate_limit_exceeded' } },
      { 'retry-after': '30' },
    );
    const err = await rejectsWith(collector.collect(ctx()), 'rate_limited', [ADMIN_KEY, 'Rate limit reached']);
    assert.equal(err.retryAfterMs, 30_000);
    const at = new Date(Date.now() + 120_000).toUTCString();
    fake.failNext(429, { error: { message: 'slow down', type: 'requests', code: null } }, { 'retry-after': at });
    const dated = await rejectsWith(collector.collect(ctx()), 'rate_limited', []);
    assert.ok(
      dated.retryAfterMs !== undefined && dated.retryAfterMs > 100_000 && dated.retryAfterMs <= 121_000,
      String(dated.retryAfterMs),
    );
  });

  it('reports 500 as upstream_error, and a body that is not JSON or not a page as malformed', async () => {
    fake.failNext(500, {
      error: { message: 'The server had an error', type: 'server_error', param: null, code: null },
    });
    assert.equal((await rejectsWith(collector.collect(ctx()), 'upstream_error', [ADMIN_KEY])).upstreamStatus, 500);
    fake.malformedNext();
    await rejectsWith(collector.collect(ctx()), 'malformed', [ADMIN_KEY]);
    fake.failNext(200, {
      object: 'page',
      data: [{ object: 'bucket', start_time: 'yesterday', results: [] }],
      has_more: false,
      next_page: null,
    });
    await rejectsWith(collector.collect(ctx()), 'malformed', [ADMIN_KEY]);
    fake.failNext(200, {
      object: 'page',
      data: [{ object: 'bucket', start_time: 1, results: [{ input_tokens: -5 }] }],
      has_more: false,
      next_page: null,
    });
    await rejectsWith(collector.collect(ctx()), 'malformed', [ADMIN_KEY]);
  });

  it('the fake counts requests in flight: three collections held at once are three concurrent requests', async () => {
    fake.resetCounters();
    fake.hold();
    const pending = [collector.collect(ctx()), collector.collect(ctx()), collector.collect(ctx())];
    await fake.whenConcurrent(3);
    assert.equal(fake.concurrent, 3);
    fake.release();
    const results = await Promise.all(pending);
    assert.equal(results.length, 3);
    assert.equal(fake.maxConcurrent, 3);
    assert.equal(fake.concurrent, 0);
  });

  it('ends a request that never answers when the signal aborts, as timeout', async () => {
    fake.hangNext();
    const controller = new AbortController();
    const pending = collector.collect(ctx(controller.signal));
    await fake.whenConcurrent(1);
    controller.abort();
    await rejectsWith(pending, 'timeout', [ADMIN_KEY]);
  });

  it('reports a refused connection as unreachable and a missing key as not_configured', async () => {
    const port = await closedPort();
    await rejectsWith(
      collector.collect(context({ credential: ADMIN_KEY, baseUrl: `http://127.0.0.1:${port}/v1` })),
      'unreachable',
      [ADMIN_KEY],
    );
    await rejectsWith(collector.collect(context({ credential: null, baseUrl: fake.baseUrl })), 'not_configured', []);
    await rejectsWith(
      collector.collect(context({ credential: ADMIN_KEY, baseUrl: 'file:///etc/passwd' })),
      'not_configured',
      [],
    );
    await rejectsWith(
      collector.collect(context({ credential: ADMIN_KEY, baseUrl: `${fake.baseUrl}?x=1` })),
      'not_configured',
      [],
    );
    await rejectsWith(
      collector.collect(context({ credential: 'sk-admin-SENTINEL\r\nX-Injected: 1', baseUrl: fake.baseUrl })),
      'not_configured',
      ['SENTINEL'],
    );
    assert.equal(fake.requests.length, 0, 'nothing is sent for a source that is not configured');
  });
});
