import { describe } from 'node:test';

// The unit suites of the fake upstreams' code, in one process.
// Each suite below was a test file of its own; it keeps its tests and hooks, and they run one after another
// in this one process, which loads tsx and the shared modules once (test/SPEED.md).

describe('fakes-anthropic', async () => {
  await import('./fakes-anthropic.suite.ts');
});
describe('fakes', async () => {
  await import('./fakes.suite.ts');
});
describe('multipart', async () => {
  await import('./multipart.suite.ts');
});
describe('openai', async () => {
  await import('./openai.suite.ts');
});
describe('stream', async () => {
  await import('./stream.suite.ts');
});
