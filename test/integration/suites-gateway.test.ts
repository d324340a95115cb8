import { describe } from 'node:test';

// The gateway suites (routes, translation, usage, safety), on in-process services.
// Each suite below was a test file of its own; it keeps its tests, hooks and service, and they run one after
// another in this one process, which loads the service's modules once (test/SPEED.md).

describe('gateway-anthropic', async () => {
  await import('./gateway-anthropic.suite.ts');
});
describe('gateway-kinds', async () => {
  await import('./gateway-kinds.suite.ts');
});
describe('gateway-openai', async () => {
  await import('./gateway-openai.suite.ts');
});
describe('gateway-safety', async () => {
  await import('./gateway-safety.suite.ts');
});
describe('gateway-translate', async () => {
  await import('./gateway-translate.suite.ts');
});
describe('responses-over-chat', async () => {
  await import('./responses-over-chat.suite.ts');
});
describe('responses-over-messages', async () => {
  await import('./responses-over-messages.suite.ts');
});
describe('aborted-usage', async () => {
  await import('./aborted-usage.suite.ts');
});
describe('credential-redirect', async () => {
  await import('./credential-redirect.suite.ts');
});
describe('usage', async () => {
  await import('./usage.suite.ts');
});
describe('usage-mixed', async () => {
  await import('./usage-mixed.suite.ts');
});
describe('hardening-4xx', async () => {
  await import('./hardening-4xx.suite.ts');
});
describe('limits-gauge', async () => {
  await import('./limits-gauge.suite.ts');
});
describe('limits-routes', async () => {
  await import('./limits-routes.suite.ts');
});
