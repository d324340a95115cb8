import { describe } from 'node:test';

// The unit suites of cli/, in one process (test/SPEED.md).

describe('install', async () => {
  await import('./install.suite.ts');
});
describe('output', async () => {
  await import('./output.suite.ts');
});
describe('limits', async () => {
  await import('./limits.suite.ts');
});
describe('provider-keys', async () => {
  await import('./provider-keys.suite.ts');
});
describe('launch', async () => {
  await import('./launch.suite.ts');
});
describe('launch (run)', async () => {
  await import('./launch-run.suite.ts');
});
describe('launch (print-env)', async () => {
  await import('./launch-print-env.suite.ts');
});
