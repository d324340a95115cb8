import assert from 'node:assert/strict';
import { test } from 'node:test';
import { afterAnswers } from '../../edge/after-answers.ts';

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
