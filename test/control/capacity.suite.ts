import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createCapacityTracker, parseDuration } from '../../control/capacity.ts';

test('parseDuration reads OpenAI reset durations and refuses anything else', () => {
  assert.equal(parseDuration('1s'), 1000);
  assert.equal(parseDuration('20ms'), 20);
  assert.equal(parseDuration('6m0s'), 360_000);
  assert.equal(parseDuration('1h2m3.5s'), 3_723_500);
  assert.equal(parseDuration('2'), 2000);
  assert.equal(parseDuration('soon'), null);
  assert.equal(parseDuration('1s junk'), null);
});

test('exhausted OpenAI headers read as zero headroom until the reset, then decay to unknown', () => {
  const c = createCapacityTracker();
  c.observeHeaders(
    'p/m',
    { 'x-ratelimit-remaining-requests': '0', 'x-ratelimit-limit-requests': '60', 'x-ratelimit-reset-requests': '1s' },
    10_000,
  );
  assert.equal(c.read('p/m', 10_500)?.headroom, 0);
  assert.equal(c.read('p/m', 11_000), null);
});

test('Anthropic headers give fractional headroom with an RFC 3339 reset', () => {
  const c = createCapacityTracker();
  const now = Date.parse('2026-01-01T00:00:00Z');
  c.observeHeaders(
    'an/m',
    {
      'anthropic-ratelimit-requests-remaining': '25',
      'anthropic-ratelimit-requests-limit': '100',
      'anthropic-ratelimit-requests-reset': '2026-01-01T00:00:30Z',
    },
    now,
  );
  const r = c.read('an/m', now + 1000);
  assert.equal(r?.headroom, 0.25);
  assert.equal(r?.resetAt, now + 30_000);
});

test(
  'a 429 marks the model exhausted for retry-after seconds; headers without a remaining count change ' + 'nothing',
  () => {
    const c = createCapacityTracker();
    c.observeRateLimited('p/m', 2, 0);
    assert.equal(c.read('p/m', 1999)?.source, 'rate_limited');
    assert.equal(c.read('p/m', 2000), null);
    c.observeHeaders('p/x', { 'x-ratelimit-limit-requests': '60' }, 0);
    assert.equal(c.read('p/x', 1), null);
  },
);
