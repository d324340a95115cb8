import { describe } from 'node:test';

// Embedded-runtime suites (placement, explain, discovery), on in-process services.
// Each suite below was a test file of its own; it keeps its tests, hooks and service, and they run one after
// another in this one process, which loads the service's modules once (test/SPEED.md).

describe('runtime-placement', async () => {
  await import('./runtime-placement.suite.ts');
});
describe('runtime-explain', async () => {
  await import('./runtime-explain.suite.ts');
});
