import { describe } from 'node:test';

// The unit suites of protocol/, in one process.
// Each suite below was a test file of its own; it keeps its tests and hooks, and they run one after another
// in this one process, which loads tsx and the shared modules once (test/SPEED.md).

describe('control-bytes', async () => {
  await import('./control-bytes.suite.ts');
});
describe('errors-doc', async () => {
  await import('./errors-doc.suite.ts');
});
describe('errors', async () => {
  await import('./errors.suite.ts');
});
describe('ids', async () => {
  await import('./ids.suite.ts');
});
describe('json-text', async () => {
  await import('./json-text.suite.ts');
});
describe('local-day', async () => {
  await import('./local-day.suite.ts');
});
describe('meter', async () => {
  await import('./meter.suite.ts');
});
describe('openapi', async () => {
  await import('./openapi.suite.ts');
});
describe('periods', async () => {
  await import('./periods.suite.ts');
});
describe('pricing', async () => {
  await import('./pricing.suite.ts');
});
describe('query', async () => {
  await import('./query.suite.ts');
});
describe('redact', async () => {
  await import('./redact.suite.ts');
});
describe('relay-batch', async () => {
  await import('./relay-batch.suite.ts');
});
describe('validate', async () => {
  await import('./validate.suite.ts');
});
describe('words', async () => {
  await import('./words.suite.ts');
});
