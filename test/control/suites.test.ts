import { describe } from 'node:test';

// The unit suites of control/, in one process.
// Each suite below was a test file of its own; it keeps its tests and hooks, and they run one after another
// in this one process, which loads tsx and the shared modules once (test/SPEED.md).

describe('capacity', async () => {
  await import('./capacity.suite.ts');
});
describe('catalog-writes', async () => {
  await import('./catalog-writes.suite.ts');
});
describe('events', async () => {
  await import('./events.suite.ts');
});
describe('gauge/alert-eval', async () => {
  await import('./gauge/alert-eval.suite.ts');
});
describe('gauge/alerts', async () => {
  await import('./gauge/alerts.suite.ts');
});
describe('gauge/budget-status', async () => {
  await import('./gauge/budget-status.suite.ts');
});
describe('gauge/capacity-signal', async () => {
  await import('./gauge/capacity-signal.suite.ts');
});
describe('gauge/device-flow', async () => {
  await import('./gauge/device-flow.suite.ts');
});
describe('gauge/recommend', async () => {
  await import('./gauge/recommend.suite.ts');
});
describe('gauge/service-activity', async () => {
  await import('./gauge/service-activity.suite.ts');
});
describe('gauge/validation', async () => {
  await import('./gauge/validation.suite.ts');
});
describe('jobs', async () => {
  await import('./jobs.suite.ts');
});
describe('llama-server-process', async () => {
  await import('./llama-server-process.suite.ts');
});
describe('memory-scheduler', async () => {
  await import('./memory-scheduler.suite.ts');
});
describe('pairing', async () => {
  await import('./pairing.suite.ts');
});
describe('presets/merge', async () => {
  await import('./presets/merge.suite.ts');
});
describe('runtime-discovery', async () => {
  await import('./runtime-discovery.suite.ts');
});
describe('traces/gen-ai', async () => {
  await import('./traces/gen-ai.suite.ts');
});
describe('smart-route/decide', async () => {
  await import('./smart-route/decide.suite.ts');
});
describe('limits', async () => {
  await import('./limits.suite.ts');
});
describe('loop-brake', async () => {
  await import('./loop-brake.suite.ts');
});
describe('token-service', async () => {
  await import('./token-service.suite.ts');
});
describe('settings-service', async () => {
  await import('./settings-service.suite.ts');
});
describe('provider-service', async () => {
  await import('./provider-service.suite.ts');
});
describe('provider-credentials', async () => {
  await import('./provider-credentials.suite.ts');
});
describe('presets/preset-service', async () => {
  await import('./presets/preset-service.suite.ts');
});
describe('smart-route/pack-service', async () => {
  await import('./smart-route/pack-service.suite.ts');
});
describe('service-accounts', async () => {
  await import('./service-accounts.suite.ts');
});
describe('gauge/budgets', async () => {
  await import('./gauge/budgets.suite.ts');
});
describe('gauge/accounts', async () => {
  await import('./gauge/accounts.suite.ts');
});
describe('services', async () => {
  await import('./services.suite.ts');
});
