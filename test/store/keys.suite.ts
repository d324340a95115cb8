import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { openStoreEnv } from '../../store/env.ts';
import { boundedKey, HASHED_KEY_PREFIX, MAX_KEY_BYTES } from '../../store/keys.ts';

// Regression (W2.6): an upstream response ID of 1,979 characters reached an LMDB key as it was; lmdb-js
// threw and the process died. Every outside value now goes through boundedKey.

const HASHED = new RegExp(`^${HASHED_KEY_PREFIX}[A-Za-z0-9_-]{43}$`);

describe('boundedKey', () => {
  it('keeps a value that fits as it is, so keys written before it existed are still found', () => {
    for (const value of [
      'resp_abc',
      'openai/gpt-4o',
      'x'.repeat(MAX_KEY_BYTES - 1),
      'é'.repeat(988),
      '\u0001' + 'a'.repeat(1976),
    ]) {
      assert.equal(boundedKey(value), value);
    }
  });

  it('hashes a value over the limit, measured in UTF-8 bytes, to a short key of its own', () => {
    const long = ['x'.repeat(MAX_KEY_BYTES), 'é'.repeat(989), '字'.repeat(700), 'r'.repeat(100_000)];
    const keys = long.map(boundedKey);
    for (const key of keys) assert.match(key, HASHED);
    assert.equal(new Set(keys).size, long.length, 'distinct values, distinct keys');
    assert.deepEqual(long.map(boundedKey), keys, 'the same value always maps to the same key');
  });

  it('hashes a short value that looks like a hashed key, so it cannot take another value’s key', () => {
    const hashed = boundedKey('y'.repeat(5000));
    assert.notEqual(boundedKey(hashed), hashed);
    assert.match(boundedKey(hashed), HASHED);
  });

  describe('in LMDB', () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-keys-'));
    const env = openStoreEnv(dir);
    after(async () => {
      await env.close();
      rmSync(dir, { recursive: true, force: true });
    });

    it(
      'every key it gives is storable and reads back, at and around the limit, whatever the value starts ' + 'with',
      async () => {
        const db = env.db<number>('keys-test');
        const values: string[] = [];
        for (const n of [MAX_KEY_BYTES - 2, MAX_KEY_BYTES - 1, MAX_KEY_BYTES, MAX_KEY_BYTES + 1, 50_000]) {
          values.push('a'.repeat(n), '\u0000' + 'a'.repeat(n - 1), '\u0001' + 'b'.repeat(n - 1));
        }
        values.push('é'.repeat(988), 'é'.repeat(989), '\ud800'.repeat(659), '\ud800'.repeat(660));
        await env.commit(() => values.forEach((v, i) => db.put(boundedKey(v), i)));
        values.forEach((v, i) => assert.equal(db.get(boundedKey(v)), i, `value ${i} (${v.length} characters)`));
      },
    );
  });
});
