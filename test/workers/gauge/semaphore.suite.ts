import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createSemaphore } from '../../../workers/gauge/semaphore.ts';

function deferred() {
  let resolve!: () => void;
  let reject!: (e: Error) => void;
  const promise = new Promise<void>((res, rej) => ((resolve = res), (reject = rej)));
  return { promise, resolve, reject };
}

test('the pool runs at most its size at once and starts waiters in arrival order', async () => {
  const pool = createSemaphore(2);
  const gates = [deferred(), deferred(), deferred(), deferred()];
  const started: number[] = [];
  const runs = gates.map((g, i) =>
    pool.run(async () => {
      started.push(i);
      await g.promise;
      return i;
    }),
  );
  await new Promise(setImmediate);
  assert.deepEqual(started, [0, 1]);
  assert.equal(pool.active(), 2);
  assert.equal(pool.waiting(), 2);
  gates[1]!.resolve();
  await runs[1];
  await new Promise(setImmediate);
  assert.deepEqual(started, [0, 1, 2]);
  gates[0]!.resolve();
  gates[2]!.resolve();
  gates[3]!.resolve();
  assert.deepEqual(await Promise.all(runs), [0, 1, 2, 3]);
  assert.equal(pool.active(), 0);
});

test('a task that throws gives its slot back', async () => {
  const pool = createSemaphore(1);
  await assert.rejects(
    pool.run(async () => {
      throw new Error('boom');
    }),
    /boom/,
  );
  assert.equal(pool.active(), 0);
  assert.equal(await pool.run(async () => 'next'), 'next');
});
