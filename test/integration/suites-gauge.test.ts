import { describe } from 'node:test';

// The Gauge suites, on in-process services.
// Each suite below was a test file of its own; it keeps its tests, hooks and service, and they run one after
// another in this one process, which loads the service's modules once (test/SPEED.md).

describe('gauge', async () => {
  await import('./gauge.suite.ts');
});
describe('gauge-accounts-cap', async () => {
  await import('./gauge-accounts-cap.suite.ts');
});
describe('gauge-activity', async () => {
  await import('./gauge-activity.suite.ts');
});
describe('gauge-pool', async () => {
  await import('./gauge-pool.suite.ts');
});
describe('gauge-secrets', async () => {
  await import('./gauge-secrets.suite.ts');
});
