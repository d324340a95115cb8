import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { UsageError } from '../../cli/args.ts';
import { amount, parseMax, parseScope, scopeWords, WINDOWS } from '../../cli/limits.ts';
import { LIMIT_WINDOWS } from '../../protocol/http/limits.ts';

// How `switchyard limits add` reads what a person types: a scope as `kind:id`, a bound with `$`, separators and
// k or M; and how it words them back.

describe('limits options', () => {
  test('the windows are the API`s', () => assert.deepEqual([...WINDOWS], [...LIMIT_WINDOWS]));

  test('a scope is kind or kind:id, in the CLI`s spelling or the API`s', () => {
    assert.deepEqual(parseScope('service'), { kind: 'service' });
    assert.deepEqual(parseScope('session'), { kind: 'session' });
    assert.deepEqual(parseScope('session:run:7'), { kind: 'session', id: 'run:7' });
    assert.deepEqual(parseScope('token:tok_1'), { kind: 'token', id: 'tok_1' });
    assert.deepEqual(parseScope('service-account:sa_1'), { kind: 'service_account', id: 'sa_1' });
    assert.deepEqual(parseScope('service_account:sa_1'), { kind: 'service_account', id: 'sa_1' });
    assert.deepEqual(parseScope('route-pack:pair'), { kind: 'route_pack', id: 'pair' });
    assert.deepEqual(parseScope('credential:key_1'), { kind: 'credential', id: 'key_1' });
    for (const bad of ['planet', 'token', 'token:', 'route-pack', 'service:x', 'session:', 'credential', ''])
      assert.throws(() => parseScope(bad), UsageError, bad);
  });

  test('a bound: dollars with $, thousands separators, k and M', () => {
    const cases: [string, number][] = [
      ['5', 5],
      ['$2.50', 2.5],
      ['100,000', 100_000],
      ['1_000_000', 1_000_000],
      ['500k', 500_000],
      ['2M', 2_000_000],
      ['0.3m', 300_000],
      ['1.5k', 1500],
    ];
    for (const [typed, n] of cases) assert.equal(parseMax(typed), n, typed);
    for (const bad of ['0', '-5', 'lots', '1,00', '5 k', '$', '1e6', '5g'])
      assert.throws(() => parseMax(bad), UsageError, bad);
  });

  test('figures and scopes in words', () => {
    assert.equal(amount('usd', 5), '$5.00');
    assert.equal(amount('usd', 0.25), '$0.2500');
    assert.equal(amount('total_tokens', 1_234_567), '1,234,567');
    assert.equal(scopeWords({ kind: 'session', id: null }), 'each session');
    assert.equal(scopeWords({ kind: 'route_pack', id: 'pair' }), 'route pack pair');
    assert.equal(scopeWords({ kind: 'service', id: null }), 'service');
  });
});
