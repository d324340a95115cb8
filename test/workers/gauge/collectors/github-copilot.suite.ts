import assert from 'node:assert/strict';
import { after, before, beforeEach, describe, it } from 'node:test';
import { collector } from '../../../../workers/gauge/collectors/github-copilot/index.ts';
import {
  freeUser,
  paidUser,
  startCopilotGaugeFake,
  type CopilotGaugeFake,
} from '../../../fakes/gauge/github-copilot.ts';
import { closedPort, context, rejectsWith } from './helpers.ts';

const TOKEN = 'github_pat_11SENTINEL0123456789abcdefghijklmnop';
const NO_COPILOT = 'gho_SENTINELnoCopilotAccess0123456789';
const RESET = '2026-12-01T00:00:00.000Z';

describe('gauge collector: github-copilot', () => {
  let fake: CopilotGaugeFake;

  before(async () => {
    fake = await startCopilotGaugeFake({ token: TOKEN, tokensWithoutCopilot: [NO_COPILOT] });
  });
  after(() => fake.close());
  beforeEach(() => {
    fake.requests.length = 0;
    fake.setUser(
      paidUser({
        resetDate: '2026-12-01T00:00:00Z',
        snapshots: {
          premium_interactions: { entitlement: 300, remaining: 240, percent_remaining: 80, unlimited: false },
          chat: { entitlement: 0, remaining: 0, percent_remaining: 100, unlimited: true },
          completions: { entitlement: 0, remaining: 0, percent_remaining: 100, unlimited: true },
        },
      }),
    );
  });

  const collect = (credential: string, signal?: AbortSignal) =>
    collector.collect(context({ credential, baseUrl: fake.baseUrl, ...(signal ? { signal } : {}) }));
  const readingOf = async (credential = TOKEN) => {
    const { readings } = await collect(credential);
    assert.equal(readings.length, 1);
    return readings[0]!;
  };

  it('turns quota snapshots into monthly windows with the reset date; unlimited quotas have no limit', async () => {
    const reading = await readingOf();
    assert.equal(reading.providerId, 'github-copilot');
    assert.equal(reading.confidence, 'medium');
    assert.deepEqual(reading.windows, [
      {
        id: 'premium_interactions',
        kind: 'requests',
        period: 'month',
        used: 60,
        limit: 300,
        remaining: 240,
        utilization: 0.2,
        resetsAt: RESET,
      },
      {
        id: 'chat',
        kind: 'requests',
        period: 'month',
        used: null,
        limit: null,
        remaining: null,
        utilization: null,
        resetsAt: RESET,
      },
      {
        id: 'completions',
        kind: 'requests',
        period: 'month',
        used: null,
        limit: null,
        remaining: null,
        utilization: null,
        resetsAt: RESET,
      },
    ]);
    assert.equal(reading.spend, null);
    const text = JSON.stringify(reading);
    assert.ok(
      !text.includes('octo-sentinel-login') && !text.includes('sentinel-org'),
      'login and organizations stay out',
    );
    // The login goes to the actor as the identity (it stores only a salted hash), never into a reading.
    assert.equal((await collect(TOKEN)).identity, 'octo-sentinel-login');
  });

  it('sends the token as `token`, the API version and its own User-Agent', async () => {
    await collect(TOKEN);
    const [req] = fake.requests;
    assert.equal(req?.path, '/copilot_internal/user');
    assert.equal(req?.headers.authorization, `token ${TOKEN}`);
    assert.equal(req?.headers['x-github-api-version'], '2025-04-01');
    assert.equal(req?.headers['user-agent'], 'switchyard-gauge');
  });

  it(
    'reads premium interactions of a credit-billed account as AI credits and drops placeholder ' + 'snapshots',
    async () => {
      fake.setUser(
        paidUser({
          resetDate: '2026-12-01T00:00:00Z',
          tokenBasedBilling: true,
          snapshots: {
            premium_interactions: { entitlement: 7000, remaining: 4061, percent_remaining: 58.01, unlimited: false },
            chat: { entitlement: 0, remaining: 0, percent_remaining: 0, unlimited: false },
          },
        }),
      );
      const reading = await readingOf();
      assert.equal(reading.windows.length, 1);
      assert.deepEqual(reading.windows[0], {
        id: 'premium_interactions',
        kind: 'credits',
        period: 'month',
        used: 2939,
        limit: 7000,
        remaining: 4061,
        utilization: 2939 / 7000,
        resetsAt: RESET,
      });
    },
  );

  it("reads the free plan's monthly quotas and what is left of them", async () => {
    fake.setUser(
      freeUser({
        monthly: { chat: 50, completions: 2000 },
        left: { chat: 41, completions: 1500 },
        resetDate: '2026-12-10',
      }),
    );
    const reading = await readingOf();
    assert.deepEqual(reading.windows, [
      {
        id: 'chat',
        kind: 'requests',
        period: 'month',
        used: 9,
        limit: 50,
        remaining: 41,
        utilization: 0.18,
        resetsAt: '2026-12-10T00:00:00.000Z',
      },
      {
        id: 'completions',
        kind: 'requests',
        period: 'month',
        used: 500,
        limit: 2000,
        remaining: 1500,
        utilization: 0.25,
        resetsAt: '2026-12-10T00:00:00.000Z',
      },
    ]);
  });

  it(
    'maps a bad token (401) and a token that may not see Copilot (404) to auth_failed, without the ' + 'token',
    async () => {
      const bad = await rejectsWith(collect('ghp_SENTINELbadtoken'), 'auth_failed', [
        'SENTINELbadtoken',
        'Bad credentials',
      ]);
      assert.equal(bad.upstreamStatus, 401);
      const hidden = await rejectsWith(collect(NO_COPILOT), 'auth_failed', [NO_COPILOT, 'SENTINEL']);
      assert.equal(hidden.upstreamStatus, 404);
      assert.match(hidden.message, /Plan: read-only/);
    },
  );

  it("maps GitHub's rate limits (403 with x-ratelimit-remaining 0, 429 with Retry-After) to rate_limited", async () => {
    const reset = Math.floor(Date.now() / 1000) + 600;
    fake.failNext(
      403,
      { message: 'API rate limit exceeded for user ID 123456.' },
      { 'x-ratelimit-remaining': '0', 'x-ratelimit-reset': String(reset) },
    );
    const forbidden = await rejectsWith(collect(TOKEN), 'rate_limited', [TOKEN, '123456']);
    assert.ok(
      forbidden.retryAfterMs !== undefined && forbidden.retryAfterMs > 500_000 && forbidden.retryAfterMs <= 600_000,
      String(forbidden.retryAfterMs),
    );
    fake.failNext(429, { message: 'You have exceeded a secondary rate limit.' }, { 'retry-after': '60' });
    assert.equal((await rejectsWith(collect(TOKEN), 'rate_limited', [TOKEN])).retryAfterMs, 60_000);
    fake.failNext(403, { message: 'Resource not accessible by integration' });
    await rejectsWith(collect(TOKEN), 'auth_failed', [TOKEN, 'integration']);
  });

  it('maps 500 to upstream_error and a body that is not JSON or of the wrong shape to malformed', async () => {
    fake.failNext(502, { message: 'Server Error' });
    await rejectsWith(collect(TOKEN), 'upstream_error', [TOKEN]);
    fake.malformedNext();
    await rejectsWith(collect(TOKEN), 'malformed', [TOKEN]);
    fake.failNext(200, { quota_snapshots: [] });
    await rejectsWith(collect(TOKEN), 'malformed', [TOKEN]);
    fake.failNext(200, { quota_snapshots: { premium_interactions: { entitlement: '300', remaining: 1 } } });
    await rejectsWith(collect(TOKEN), 'malformed', [TOKEN]);
  });

  it('ends a hung request on abort as timeout, and a closed port as unreachable', async () => {
    fake.hangNext();
    const controller = new AbortController();
    const pending = collect(TOKEN, controller.signal);
    await fake.whenConcurrent(1);
    controller.abort();
    await rejectsWith(pending, 'timeout', [TOKEN]);
    const port = await closedPort();
    await rejectsWith(
      collector.collect(context({ credential: TOKEN, baseUrl: `http://127.0.0.1:${port}` })),
      'unreachable',
      [TOKEN],
    );
  });
});
