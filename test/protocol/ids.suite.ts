import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { encodeTime, monotonicIdFactory, newId, timeOfId } from '../../protocol/ids.ts';

const CROCKFORD_26 = /^[0-9A-HJKMNP-TV-Z]{26}$/;

describe('newId', () => {
  it('is the prefix and 26 Crockford base32 characters', () => {
    for (let i = 0; i < 100; i++) {
      const id = newId('req_');
      assert.ok(id.startsWith('req_'), id);
      assert.match(id.slice(4), CROCKFORD_26);
    }
  });

  it('works with an empty prefix', () => {
    assert.match(newId(''), CROCKFORD_26);
  });

  it('sorts by time across milliseconds', () => {
    const base = 1_767_225_600_000;
    const times = [base, base + 1, base + 2, base + 31, base + 32, base + 1000, base + 86_400_000];
    const ids = times.map((t) => newId('x_', t));
    assert.deepEqual([...ids].sort(), ids);
    // Shuffled order sorts back to time order.
    const shuffled = [ids[3]!, ids[0]!, ids[6]!, ids[1]!, ids[5]!, ids[2]!, ids[4]!];
    assert.deepEqual(shuffled.sort(), ids);
  });

  it('produces 10,000 unique ids in one millisecond', () => {
    const now = 1_767_225_600_000;
    const ids = new Set<string>();
    for (let i = 0; i < 10_000; i++) ids.add(newId('id_', now));
    assert.equal(ids.size, 10_000);
  });

  it('produces 10,000 unique ids at the current time', () => {
    const ids = new Set<string>();
    for (let i = 0; i < 10_000; i++) ids.add(newId('id_'));
    assert.equal(ids.size, 10_000);
  });
});

describe('encodeTime / timeOfId', () => {
  it('encodes the epoch and the 48-bit maximum', () => {
    assert.equal(encodeTime(0), '0000000000');
    assert.equal(encodeTime(2 ** 48 - 1), '7ZZZZZZZZZ');
  });

  it('decodes the time an id was made at', () => {
    for (const t of [0, 1, 1_767_225_600_123, 2 ** 48 - 1]) {
      assert.equal(timeOfId(newId('evt_', t), 'evt_'), t);
    }
  });

  it('decodes ids from the monotonic factory', () => {
    const next = monotonicIdFactory('aud_');
    assert.equal(timeOfId(next(1_767_225_600_500), 'aud_'), 1_767_225_600_500);
  });
});

describe('monotonicIdFactory', () => {
  it('yields strictly increasing ids within one millisecond', () => {
    const next = monotonicIdFactory('aud_');
    const now = 1_767_225_600_000;
    const ids = Array.from({ length: 5000 }, () => next(now));
    for (let i = 1; i < ids.length; i++) {
      assert.ok(ids[i - 1]! < ids[i]!, `${ids[i - 1]} !< ${ids[i]}`);
    }
    for (const id of ids) assert.match(id.slice(4), CROCKFORD_26);
  });

  it('stays increasing across milliseconds', () => {
    const next = monotonicIdFactory('aud_');
    const base = 1_767_225_600_000;
    const ids: string[] = [];
    for (let ms = 0; ms < 20; ms++) for (let i = 0; i < 50; i++) ids.push(next(base + ms));
    for (let i = 1; i < ids.length; i++) assert.ok(ids[i - 1]! < ids[i]!);
  });

  it('keeps increasing when the clock steps backwards', () => {
    const next = monotonicIdFactory('aud_');
    const a = next(1_767_225_600_010);
    const b = next(1_767_225_600_000);
    assert.ok(a < b);
    assert.equal(timeOfId(b, 'aud_'), 1_767_225_600_010);
  });

  it('gives independent factories unrelated random parts', () => {
    const now = 1_767_225_600_000;
    assert.notEqual(monotonicIdFactory('a_')(now), monotonicIdFactory('a_')(now));
  });
});
