import { describe } from 'node:test';

// The control-plane and edge suites, on in-process services.
// Each suite below was a test file of its own; it keeps its tests, hooks and service, and they run one after
// another in this one process, which loads the service's modules once (test/SPEED.md).

describe('capabilities', async () => {
  await import('./capabilities.suite.ts');
});
describe('openapi', async () => {
  await import('./openapi.suite.ts');
});
describe('metrics', async () => {
  await import('./metrics.suite.ts');
});
describe('provider-lists', async () => {
  await import('./provider-lists.suite.ts');
});
describe('secrets', async () => {
  await import('./secrets.suite.ts');
});
describe('pairing', async () => {
  await import('./pairing.suite.ts');
});
describe('hardware', async () => {
  await import('./hardware.suite.ts');
});
describe('http', async () => {
  await import('./http.suite.ts');
});
describe('edge-connections', async () => {
  await import('./edge-connections.suite.ts');
});
