import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { createCapacityTracker } from '../../../control/capacity.ts';
import { buildCatalog } from '../../../state/catalog-index.ts';
import { createCapacitySignal, statusOf, tightest, UNDATED_MS } from '../../../control/gauge/capacity-signal.ts';
import type { GaugeReading, GaugeWindow } from '../../../protocol/gauge.ts';
import { DEFAULT_TIMEOUTS, type ProviderKind } from '../../../protocol/providers.ts';
import type { StoredReading } from '../../../store/gauge-data-repo.ts';
import type { GaugeSourceRecord } from '../../../store/gauge-source-repo.ts';
import type { ModelRecord } from '../../../store/model-repo.ts';
import type { ProviderRecord } from '../../../store/provider-repo.ts';
import { credential, record } from '../../helpers/catalog.ts';

// One capacity signal over the live tracker and Gauge's polled readings: the tightest counting window, a reset
// that passed no longer counts, the most-headroom account of a provider kind speaks, the tighter of live and
// polled wins, and opted out only the live tracker counts.

const NOW = Date.parse('2026-05-01T12:00:00Z');
const iso = (ms: number) => new Date(ms).toISOString();

const win = (id: string, over: Partial<GaugeWindow>): GaugeWindow => ({
  id,
  kind: 'requests',
  period: '1m',
  used: null,
  limit: null,
  remaining: null,
  utilization: null,
  resetsAt: null,
  ...over,
});
const reading = (
  accountId: string,
  providerId: string,
  windows: GaugeWindow[],
  collectedAt = NOW - 60_000,
): GaugeReading => ({
  accountId,
  providerId,
  collectedAt: iso(collectedAt),
  source: 'polled',
  confidence: 'high',
  windows,
  spend: null,
  credits: null,
});

describe('tightest', () => {
  test('the least headroom among counting windows; remaining, used and utilization all count', () => {
    const r = reading('a', 'openrouter', [
      win('rem', { limit: 100, remaining: 50, resetsAt: iso(NOW + 60_000) }),
      win('used', { limit: 10, used: 8, resetsAt: iso(NOW + 60_000) }),
      win('util', { utilization: 0.7, resetsAt: iso(NOW + 60_000) }),
      win('nolimit', { used: 5 }),
    ]);
    const t = tightest(r, NOW)!;
    assert.equal(t.windowId, 'used');
    assert.ok(Math.abs(t.headroom - 0.2) < 1e-9);
  });

  test(
    'a window whose reset passed no longer counts; one without a reset counts for UNDATED_MS after the ' + 'reading',
    () => {
      const exhausted = win('w', { limit: 10, remaining: 0, resetsAt: iso(NOW - 1) });
      assert.equal(tightest(reading('a', 'p', [exhausted]), NOW), null);
      const undated = reading('a', 'p', [win('w', { limit: 10, remaining: 0 })], NOW - 1000);
      assert.equal(tightest(undated, NOW)?.headroom, 0);
      assert.equal(tightest(undated, NOW - 1000 + UNDATED_MS), null);
      assert.equal(
        tightest(
          reading('a', 'p', [win('w', { limit: 10, remaining: 5, resetsAt: iso(NOW + 1e10) })], NOW - 25 * 3_600_000),
          NOW,
        ),
        null,
        'a reading over a day old',
      );
    },
  );

  test('credits count as remaining/total', () => {
    const r = { ...reading('a', 'openrouter', []), credits: { remaining: 1, total: 4, currency: 'USD' } };
    assert.equal(tightest(r, NOW)?.headroom, 0.25);
  });

  test('status labels', () => {
    assert.deepEqual(
      [statusOf(null), statusOf(0), statusOf(0.05), statusOf(0.5), statusOf(0, true)],
      ['unknown', 'exhausted', 'low', 'ok', 'rate_limited'],
    );
  });
});

const provider = (id: string, kind: ProviderKind): ProviderRecord => ({
  id,
  kind,
  displayName: id,
  baseUrl: 'http://127.0.0.1:1/v1',
  enabled: true,
  autoProxyModels: false,
  credentials: [credential('ref')],
  hints: {},
  timeouts: { ...DEFAULT_TIMEOUTS },
  createdAt: 0,
  updatedAt: 0,
});
const model = (providerId: string): ModelRecord => record(providerId, 'm');
const source = (id: string, providerId: string, enabled = true): GaugeSourceRecord => ({
  id,
  kind: 'account',
  collectorId: 'openrouter',
  providerId,
  authMode: 'api_key',
  label: id,
  enabled,
  builtIn: false,
  credentialRef: 'ref',
  config: {},
  createdAt: 0,
  updatedAt: 0,
});

function harness(accounts: [GaugeSourceRecord, GaugeReading][], enabled = true) {
  const live = createCapacityTracker();
  const catalog = buildCatalog(
    [provider('or', 'openrouter'), provider('oa', 'openai')],
    [model('or'), model('oa')],
    new Map(),
  );
  let state = { enabled, accounts };
  const signal = createCapacitySignal({
    live,
    readings: (): StoredReading[] => state.accounts.map(([s, r]) => ({ sourceId: s.id, reading: r })),
    sources: () => state.accounts.map(([s]) => s),
    catalog: () => catalog,
    enabled: () => state.enabled,
  });
  return { live, signal, set: (next: Partial<typeof state>) => ((state = { ...state, ...next }), signal.invalidate()) };
}

const limited = (remaining: number, resetsAt = NOW + 3_600_000) => [
  win('key_limit', { kind: 'spend', limit: 10, remaining, resetsAt: iso(resetsAt) }),
];

describe('the combined signal', () => {
  test('a polled account speaks for the models of provider records of its kind, and no others', () => {
    const h = harness([[source('acct_1', 'openrouter'), reading('acct_1', 'openrouter', limited(0))]]);
    const r = h.signal.read('or/m', NOW)!;
    assert.equal(r.source, 'gauge');
    assert.equal(r.headroom, 0);
    assert.equal(r.resetAt, NOW + 3_600_000);
    assert.equal(h.signal.read('oa/m', NOW), null);
  });

  test('a reset that passed, a disabled account, and opting out each stop a polled reading from counting', () => {
    const h = harness([[source('acct_1', 'openrouter'), reading('acct_1', 'openrouter', limited(0, NOW - 1))]]);
    assert.equal(h.signal.read('or/m', NOW), null);
    h.set({ accounts: [[source('acct_1', 'openrouter', false), reading('acct_1', 'openrouter', limited(0))]] });
    assert.equal(h.signal.read('or/m', NOW), null);
    h.set({
      accounts: [[source('acct_1', 'openrouter'), reading('acct_1', 'openrouter', limited(0))]],
      enabled: false,
    });
    assert.equal(h.signal.read('or/m', NOW), null);
    assert.deepEqual(h.signal.rows(NOW), []);
  });

  test(
    'with several accounts of a kind the one with most headroom speaks; one with nothing counting means no ' +
      'evidence',
    () => {
      const h = harness([
        [source('acct_1', 'openrouter'), reading('acct_1', 'openrouter', limited(0))],
        [source('acct_2', 'openrouter'), reading('acct_2', 'openrouter', limited(4))],
      ]);
      assert.equal(h.signal.read('or/m', NOW)?.headroom, 0.4);
      assert.equal(h.signal.polled('openrouter', NOW)?.accountId, 'acct_2');
      h.set({
        accounts: [
          [source('acct_1', 'openrouter'), reading('acct_1', 'openrouter', limited(0))],
          [source('acct_3', 'openrouter'), reading('acct_3', 'openrouter', [])],
        ],
      });
      assert.equal(h.signal.read('or/m', NOW), null);
    },
  );

  test('live headers and a polled reading: the tighter wins', () => {
    const h = harness([[source('acct_1', 'openrouter'), reading('acct_1', 'openrouter', limited(5))]]);
    h.live.observeHeaders(
      'or/m',
      {
        'x-ratelimit-remaining-requests': '1',
        'x-ratelimit-limit-requests': '10',
        'x-ratelimit-reset-requests': '30s',
      },
      NOW,
    );
    assert.equal(h.signal.read('or/m', NOW)?.source, 'headers');
    assert.equal(h.signal.read('or/m', NOW)?.headroom, 0.1);
    h.live.observeHeaders(
      'or/m',
      {
        'x-ratelimit-remaining-requests': '9',
        'x-ratelimit-limit-requests': '10',
        'x-ratelimit-reset-requests': '30s',
      },
      NOW,
    );
    assert.equal(h.signal.read('or/m', NOW)?.source, 'gauge');
    assert.equal(h.signal.read('or/m', NOW)?.headroom, 0.5);
  });

  test('rows: one per active account, then one per live model, with the recent rate-limited share', () => {
    const h = harness([[source('acct_1', 'openrouter'), reading('acct_1', 'openrouter', limited(0))]]);
    h.live.observeHeaders(
      'or/m',
      { 'x-ratelimit-remaining-requests': '3', 'x-ratelimit-limit-requests': '4', 'x-ratelimit-reset-requests': '30s' },
      NOW - 2000,
    );
    h.live.observeRateLimited('or/m', 5, NOW - 1000);
    assert.deepEqual(h.signal.rows(NOW), [
      {
        providerId: 'openrouter',
        accountId: 'acct_1',
        model: null,
        headroom: 0,
        resetsAt: iso(NOW + 3_600_000),
        status: 'exhausted',
        recentRateLimitedShare: 0.5,
        source: 'polled',
        observedAt: iso(NOW - 60_000),
      },
      {
        providerId: 'openrouter',
        accountId: 'live-headers.or',
        model: 'or/m',
        headroom: 0,
        resetsAt: iso(NOW + 4000),
        status: 'rate_limited',
        recentRateLimitedShare: 0.5,
        source: 'live_headers',
        observedAt: iso(NOW - 1000),
      },
    ]);
    // Fifteen minutes on, the traffic is no longer recent and the 429 has reset: nothing live is left to list.
    assert.equal(h.signal.rows(NOW + 16 * 60_000).length, 1);
  });
});
