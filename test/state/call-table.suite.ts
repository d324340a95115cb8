import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { CallTable } from '../../state/call-table.ts';

describe('CallTable', () => {
  it('counts, finds and drops calls by id as a Map would', () => {
    const calls = new CallTable<string>();
    assert.equal(calls.size, 0);
    calls.set(1, 'a');
    calls.set(2, 'b');
    calls.set(2, 'b again');
    assert.equal(calls.size, 2, 'setting an id again replaces its value');
    assert.equal(calls.get(2), 'b again');
    assert.equal(calls.has(1), true);
    assert.equal(calls.get(3), undefined);
    assert.equal(calls.has(3), false);
    assert.equal(calls.delete(1), true);
    assert.equal(calls.delete(1), false, 'a second delete finds nothing');
    assert.equal(calls.size, 1);
    assert.deepEqual(calls.values(), ['b again']);
    calls.clear();
    assert.equal(calls.size, 0);
    assert.deepEqual(calls.values(), []);
  });

  it('keeps up with many calls coming and going', () => {
    const calls = new CallTable<{ id: number }>();
    const open = new Set<number>();
    for (let id = 1; id <= 20_000; id++) {
      calls.set(id, { id });
      open.add(id);
      // Calls end out of order, some long after they started.
      if (id % 3 === 0) for (const gone of [id - 2, id]) calls.delete(gone), open.delete(gone);
    }
    assert.equal(calls.size, open.size);
    assert.deepEqual(
      calls
        .values()
        .map((c) => c.id)
        .sort((a, b) => a - b),
      [...open].sort((a, b) => a - b),
    );
    for (const id of open) assert.equal(calls.get(id)?.id, id);
  });

  it('holds no inherited keys', () => {
    const calls = new CallTable<number>();
    assert.equal(calls.has('toString' as unknown as number), false);
    assert.equal(calls.get('constructor' as unknown as number), undefined);
  });
});
