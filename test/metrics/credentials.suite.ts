import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createCredentialMetrics, type CredentialState } from '../../metrics/credentials.ts';
import { MAX_SERIES, createRegistry } from '../../metrics/registry.ts';
import type { UsageEvent } from '../../protocol/gateway.ts';
import { parseExposition, sampleValue, sumOf } from '../helpers/prometheus.ts';

const event = (credentialId: string | undefined, outcome: UsageEvent['outcome'] = 'ok'): UsageEvent => ({
  kind: 'usage',
  requestId: 'req_x',
  at: 0,
  tokenId: 'tok_x',
  providerId: 'pool',
  modelId: 'pool/m',
  op: 'chat.completions',
  outcome,
  usage: null,
  ...(credentialId !== undefined && { credentialId }),
});

const key = (credentialId: string, over: Partial<CredentialState> = {}): CredentialState => ({
  providerId: 'pool',
  credentialId,
  state: 'usable',
  requestsRemaining: null,
  tokensRemaining: null,
  inflight: 0,
  sessions: 0,
  ...over,
});

test('calls count by the key that served them and outcome; a call without a key adds nothing', () => {
  const registry = createRegistry();
  const metrics = createCredentialMetrics(registry, () => []);
  metrics.usage(event('key_a'));
  metrics.usage(event('key_a'));
  metrics.usage(event('key_a', 'failed'));
  metrics.usage(event('key_b'));
  metrics.usage(event(undefined));
  const f = parseExposition(registry.render());
  const calls = (credential: string, outcome: string) =>
    sampleValue(f, 'switchyard_credential_calls_total', { provider: 'pool', credential, outcome });
  assert.deepEqual([calls('key_a', 'ok'), calls('key_a', 'failed'), calls('key_b', 'ok')], [2, 1, 1]);
  assert.equal(sumOf(f, 'switchyard_credential_calls_total'), 4);
});

test("a scrape reads each key's state, windows, calls in flight and sessions; a removed key's series go", () => {
  const registry = createRegistry();
  let keys = [
    key('key_a', { requestsRemaining: 7, tokensRemaining: 900, inflight: 2, sessions: 3 }),
    key('key_b', { state: 'cooling' }),
  ];
  createCredentialMetrics(registry, () => keys);
  let f = parseExposition(registry.render());
  const state = (credential: string, s: string) =>
    sampleValue(f, 'switchyard_credential_state', { provider: 'pool', credential, state: s });
  assert.deepEqual(
    ['usable', 'cooling', 'rejected', 'disabled'].map((s) => [state('key_a', s), state('key_b', s)]),
    [
      [1, 0],
      [0, 1],
      [0, 0],
      [0, 0],
    ],
  );
  const one = { provider: 'pool', credential: 'key_a' };
  assert.equal(sampleValue(f, 'switchyard_credential_remaining', { ...one, window: 'requests' }), 7);
  assert.equal(sampleValue(f, 'switchyard_credential_remaining', { ...one, window: 'tokens' }), 900);
  assert.equal(sampleValue(f, 'switchyard_credential_in_flight', one), 2);
  assert.equal(sampleValue(f, 'switchyard_credential_sessions', one), 3);
  // Unknown windows have no series at all, rather than a made-up 0.
  assert.equal(registry.render().includes('credential="key_b",window='), false);
  keys = [key('key_b', { state: 'rejected' })];
  f = parseExposition(registry.render());
  assert.equal(registry.render().includes('key_a'), false);
  assert.equal(state('key_b', 'rejected'), 1);
});

test('past MAX_SERIES keys, new keys count under `other`', () => {
  const registry = createRegistry();
  const metrics = createCredentialMetrics(registry, () => []);
  for (let i = 0; i < MAX_SERIES + 5; i++) metrics.usage(event(`key_${i}`));
  const f = parseExposition(registry.render());
  assert.equal(sumOf(f, 'switchyard_credential_calls_total'), MAX_SERIES + 5);
  // The registry folds the label sets past its cap into one series whose every label is `other`.
  assert.equal(sumOf(f, 'switchyard_credential_calls_total', { credential: 'other' }), 5);
});
