import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { Worker } from 'node:worker_threads';
import { createLedger, createLedgerBuffer } from '../../state/limit-ledger.ts';
import { windowEndOf, windowStartOf } from '../../protocol/limit-windows.ts';

describe('limit ledger', () => {
  test('reserves while used plus reserved fits, settles to what was used, refuses past the bound', () => {
    const ledger = createLedger(createLedgerBuffer(64));
    const slot = ledger.slotOf('lim_a', 'tok_1');
    assert.ok(slot >= 0);
    assert.equal(ledger.reserve(slot, 1000, 60n, 100n), true);
    assert.equal(ledger.reserve(slot, 1000, 50n, 100n), false, '60 reserved + 50 > 100');
    assert.deepEqual(ledger.read(slot), { windowStart: 1000, used: 0n, reserved: 60n });
    ledger.settle(slot, 1000, 60n, 45n);
    assert.deepEqual(ledger.read(slot), { windowStart: 1000, used: 45n, reserved: 0n });
    assert.equal(ledger.reserve(slot, 1000, 55n, 100n), true, '45 + 55 = 100 fits exactly');
  });

  test('a new window clears the use, keeps what is in flight; a late settle of the old one counts nothing', () => {
    const ledger = createLedger(createLedgerBuffer(64));
    const slot = ledger.slotOf('lim_a', '*');
    ledger.reserve(slot, 1000, 10n, 100n);
    ledger.settle(slot, 1000, 10n, 90n);
    assert.equal(ledger.reserve(slot, 1000, 20n, 100n), false);
    assert.equal(ledger.reserve(slot, 1000, 5n, 100n), true);
    assert.equal(ledger.reserve(slot, 2000, 20n, 100n), true, 'the next window starts from zero');
    assert.deepEqual(ledger.read(slot), { windowStart: 2000, used: 0n, reserved: 25n });
    ledger.settle(slot, 1000, 5n, 5n);
    assert.deepEqual(ledger.read(slot), { windowStart: 2000, used: 0n, reserved: 20n });
  });

  test('keys: the same key finds its slot again, others find their own, a full probe run answers -1', () => {
    const claims: string[] = [];
    const buffer = createLedgerBuffer(4);
    const ledger = createLedger(buffer, (_slot, limitId, key) => claims.push(`${limitId}|${key}`));
    const slots = ['a', 'b', 'c', 'd'].map((k) => ledger.slotOf('lim_a', k));
    assert.equal(new Set(slots).size, 4);
    assert.equal(ledger.slotOf('lim_a', 'b'), slots[1]);
    assert.equal(ledger.slotOf('lim_a', 'e'), -1);
    assert.deepEqual(claims, ['lim_a|a', 'lim_a|b', 'lim_a|c', 'lim_a|d']);
    // Another thread's view of the same memory finds the same slots without claiming again.
    const other = createLedger(buffer, () => assert.fail('claimed twice'));
    assert.equal(other.slotOf('lim_a', 'c'), slots[2]);
  });

  test('four threads reserving at once never admit past the bound', async () => {
    const buffer = createLedgerBuffer(16);
    const slot = createLedger(buffer).slotOf('lim_a', '*');
    createLedger(buffer).reserve(slot, 1000, 0n, 30000n);
    // Each thread runs the ledger module itself on the shared memory, as each edge thread will (W3.2).
    const source = `
      const { parentPort, workerData } = require('node:worker_threads');
      import('tsx/esm/api').then(({ register }) => {
        register();
        return import(workerData.module);
      }).then(({ createLedger }) => {
        const ledger = createLedger(workerData.buffer);
        const slot = ledger.slotOf('lim_a', '*');
        let admitted = 0;
        for (let i = 0; i < 20000; i++) {
          if (!ledger.reserve(slot, 1000, 3n, 30000n)) continue;
          admitted++;
          ledger.settle(slot, 1000, 3n, 3n);
        }
        parentPort.postMessage(admitted);
      });`;
    const module = new URL('../../state/limit-ledger.ts', import.meta.url).href;
    const counts = await Promise.all(
      Array.from(
        { length: 4 },
        () =>
          new Promise<number>((resolve, reject) => {
            const w = new Worker(source, { eval: true, workerData: { buffer, module } });
            w.once('message', resolve);
            w.once('error', reject);
          }),
      ),
    );
    const state = createLedger(buffer).read(slot);
    assert.equal(state.reserved, 0n);
    assert.equal(state.used, BigInt(counts.reduce((a, b) => a + b, 0) * 3));
    assert.ok(state.used <= 30000n, String(state.used));
    assert.equal(state.used, 30000n, 'the room is used up whole');
  });
});

describe('limit windows', () => {
  const at = (y: number, m: number, d: number, h = 0, min = 0) => new Date(y, m - 1, d, h, min).getTime();

  test('minute and hour in UTC; day, week from Monday, and month in local time', () => {
    const now = Date.UTC(2026, 10, 27, 10, 17, 42, 5);
    assert.equal(windowStartOf('minute', now), Date.UTC(2026, 10, 27, 10, 17));
    assert.equal(windowEndOf('minute', windowStartOf('minute', now)), Date.UTC(2026, 10, 27, 10, 18));
    assert.equal(windowStartOf('hour', now), Date.UTC(2026, 10, 27, 10));
    const thursday = at(2026, 11, 26, 15, 30);
    assert.equal(windowStartOf('day', thursday), at(2026, 11, 26));
    assert.equal(windowEndOf('day', at(2026, 11, 26)), at(2026, 11, 27));
    assert.equal(windowStartOf('week', thursday), at(2026, 11, 23), 'the Monday before');
    assert.equal(
      windowStartOf('week', at(2026, 11, 29, 23, 59)),
      at(2026, 11, 23),
      'Sunday is the last day of its week',
    );
    assert.equal(windowEndOf('week', at(2026, 11, 23)), at(2026, 11, 30));
    assert.equal(windowStartOf('month', thursday), at(2026, 11, 1));
    assert.equal(windowEndOf('month', at(2026, 12, 1)), at(2027, 1, 1), 'December ends in the next year');
  });
});
