import { describe } from 'node:test';

// The unit suites of metrics/, in one process.
// Each suite below was a test file of its own; it keeps its tests and hooks, and they run one after another
// in this one process, which loads tsx and the shared modules once (test/SPEED.md).

describe('credentials', async () => {
  await import('./credentials.suite.ts');
});
describe('registry', async () => {
  await import('./registry.suite.ts');
});
describe('relay-tap', async () => {
  await import('./relay-tap.suite.ts');
});
describe('traffic', async () => {
  await import('./traffic.suite.ts');
});
