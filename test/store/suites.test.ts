import { describe } from 'node:test';

// The unit suites of store/, in one process.
// Each suite below was a test file of its own; it keeps its tests and hooks, and they run one after another
// in this one process, which loads tsx and the shared modules once (test/SPEED.md).

describe('benchmark-repo', async () => {
  await import('./benchmark-repo.suite.ts');
});
describe('gauge-activity', async () => {
  await import('./gauge-activity.suite.ts');
});
describe('gauge-data-repo', async () => {
  await import('./gauge-data-repo.suite.ts');
});
describe('keys', async () => {
  await import('./keys.suite.ts');
});
describe('model-repo', async () => {
  await import('./model-repo.suite.ts');
});
describe('response-route-repo', async () => {
  await import('./response-route-repo.suite.ts');
});
describe('usage-repo', async () => {
  await import('./usage-repo.suite.ts');
});
describe('vault', async () => {
  await import('./vault.suite.ts');
});
describe('limit-journal', async () => {
  await import('./limit-journal.suite.ts');
});
describe('usage-journal', async () => {
  await import('./usage-journal.suite.ts');
});
describe('request-log-repo', async () => {
  await import('./request-log-repo.suite.ts');
});
