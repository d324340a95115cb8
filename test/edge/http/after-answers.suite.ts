import assert from 'node:assert/strict';
import { test } from 'node:test';
import { afterAnswers } from '../../../edge/http/after-answers.ts';

test('tasks run in order, after the promise chains of their turn (where answers are written)', async () => {
  const seen: string[] = [];
  afterAnswers(() => seen.push('log a'));
  // An answer reaches the socket a few promise hops after its worker message.
  void Promise.resolve()
    .then(() => Promise.resolve())
    .then(() => seen.push('answer'));
  afterAnswers(() => seen.push('log b'));
  assert.deepEqual(seen, []);
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(seen, ['answer', 'log a', 'log b']);
});

test('a task queued by a task runs in a later turn, not lost', async () => {
  const seen: string[] = [];
  afterAnswers(() => {
    seen.push('first');
    afterAnswers(() => seen.push('second'));
  });
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(seen, ['first']);
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(seen, ['first', 'second']);
});

test('a task that throws is reported on stderr; the tasks after it still run', async (t) => {
  const reported: unknown[][] = [];
  t.mock.method(console, 'error', (...args: unknown[]) => void reported.push(args));
  const seen: string[] = [];
  afterAnswers(() => {
    throw new Error('broken line');
  });
  afterAnswers(() => seen.push('usage'));
  await new Promise((resolve) => setImmediate(resolve));
  assert.deepEqual(seen, ['usage']);
  assert.equal(reported.length, 1);
  assert.match(String(reported[0]![1]), /broken line/);
});
