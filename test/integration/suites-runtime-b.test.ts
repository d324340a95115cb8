import { describe } from 'node:test';

// Embedded-runtime suites (tools, the library, load and unload), on in-process services.
// Each suite below was a test file of its own; it keeps its tests, hooks and service, and they run one after
// another in this one process, which loads the service's modules once (test/SPEED.md).

describe('runtime-tools', async () => {
  await import('./runtime-tools.suite.ts');
});
describe('runtime-local', async () => {
  await import('./runtime-local.suite.ts');
});
describe('runtime', async () => {
  await import('./runtime.suite.ts');
});
describe('runtime-first-file', async () => {
  await import('./runtime-first-file.suite.ts');
});
describe('scheduler', async () => {
  await import('./scheduler.suite.ts');
});
