import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createCapacityTracker } from '../../../control/capacity.ts';
import { buildCatalog } from '../../../state/catalog-index.ts';
import { decide, FALLBACK_ROUTE_ID } from '../../../control/smart-route/decide.ts';
import { createLatencyTracker } from '../../../control/smart-route/latency.ts';
import type { RoutePackView, Strategy } from '../../../protocol/http/route-packs.ts';
import { DEFAULT_TIMEOUTS } from '../../../protocol/providers.ts';
import type { ModelRecord } from '../../../store/model-repo.ts';
import type { ProviderRecord } from '../../../store/provider-repo.ts';
import { credential } from '../../helpers/catalog.ts';

const provider = (id: string, over: Partial<ProviderRecord> = {}): ProviderRecord => ({
  id,
  kind: 'openai',
  displayName: id,
  baseUrl: 'http://127.0.0.1:1/v1',
  enabled: true,
  autoProxyModels: false,
  credentials: [credential('ref')],
  hints: {},
  timeouts: { ...DEFAULT_TIMEOUTS },
  createdAt: 0,
  updatedAt: 0,
  ...over,
});
const model = (providerId: string, price: number | null): ModelRecord => ({
  id: `${providerId}/m`,
  providerId,
  upstreamModelId: 'm',
  displayName: 'm',
  families: ['styleA.chat_completions'],
  aliases: [],
  hidden: false,
  contextWindow: null,
  pricing:
    price === null
      ? null
      : {
          inputPerMTok: price,
          outputPerMTok: price,
          cachedInputPerMTok: null,
          cacheWritePerMTok: null,
          cacheWrite1hPerMTok: null,
          currency: 'USD',
        },
  acceleration: null,
  createdAt: 0,
  updatedAt: 0,
});

const catalog = buildCatalog(
  [provider('a'), provider('b'), provider('c'), provider('nokey', { credentials: [] })],
  [model('a', 5), model('b', null), model('c', 1), model('nokey', 0)],
  new Map(),
);
const pack = (strategy: Strategy, maxAttempts = 4): RoutePackView => ({
  slug: 'p',
  displayName: 'p',
  strategy,
  routes: ['a', 'b', 'c', 'nokey'].map((id) => ({ id, model: `${id}/m`, weight: 1 })),
  fallback: { model: 'a/m' },
  retryOn: ['rate_limited'],
  maxAttempts,
  createdAt: '',
  updatedAt: '',
});
const signals = () => ({ capacity: createCapacityTracker(), latency: createLatencyTracker() });
const order = (strategy: Strategy, s = signals(), maxAttempts = 4) =>
  decide(pack(strategy, maxAttempts), 'styleA.chat_completions', catalog, s).attempts.map((x) => x.routeId);

test('ordered keeps pack order, skips a route without a credential, ends with the fallback', () => {
  const d = decide(pack('ordered'), 'styleA.chat_completions', catalog, signals());
  assert.deepEqual(
    d.attempts.map((x) => x.routeId),
    ['a', 'b', 'c', FALLBACK_ROUTE_ID],
  );
  assert.deepEqual(
    d.candidates.find((c) => c.routeId === 'nokey'),
    {
      routeId: 'nokey',
      model: 'nokey/m',
      modelId: 'nokey/m',
      providerId: 'nokey',
      weight: 1,
      eligible: false,
      attempt: null,
      reason: 'provider has no credential',
    },
  );
});

test('cost ranks the cheapest first and unpriced routes last; maxAttempts cuts the list', () => {
  assert.deepEqual(order('cost'), ['c', 'a', 'b', FALLBACK_ROUTE_ID]);
  assert.deepEqual(order('cost', signals(), 1), ['c', FALLBACK_ROUTE_ID]);
});

test('latency ranks measured routes by their estimate, unmeasured after', () => {
  const s = signals();
  s.latency.observe('b/m', 50);
  s.latency.observe('a/m', 300);
  assert.deepEqual(order('latency', s), ['b', 'a', 'c', FALLBACK_ROUTE_ID]);
});

test('capacity puts an exhausted route last', () => {
  const s = signals();
  s.capacity.observeHeaders('a/m', { 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-reset-requests': '60s' });
  s.capacity.observeHeaders('b/m', {
    'x-ratelimit-remaining-requests': '10',
    'x-ratelimit-limit-requests': '100',
    'x-ratelimit-reset-requests': '60s',
  });
  assert.deepEqual(order('capacity', s), ['c', 'b', 'a', FALLBACK_ROUTE_ID]);
});
