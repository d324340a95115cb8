import { describe } from 'node:test';

// The unit suites of state/, in one process.
// Each suite below was a test file of its own; it keeps its tests and hooks, and they run one after another
// in this one process, which loads tsx and the shared modules once (test/SPEED.md).

describe('auth-table', async () => {
  await import('./auth-table.suite.ts');
});
describe('catalog-index', async () => {
  await import('./catalog-index.suite.ts');
});
describe('catalog-mirror', async () => {
  await import('./catalog-mirror.suite.ts');
});
describe('call-table', async () => {
  await import('./call-table.suite.ts');
});
describe('price-index', async () => {
  await import('./price-index.suite.ts');
});
describe('limit-ledger', async () => {
  await import('./limit-ledger.suite.ts');
});
