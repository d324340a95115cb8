import { describe } from 'node:test';
import { withTwoEdgeThreads } from '../helpers/edge-threads.ts';

// The gateway family (suites-gateway.test.ts) again with two edge threads
// (service/edge-threads.ts): each in-process service listens from the main thread and one edge thread, and the
// kernel spreads each suite's connections between them.
if (withTwoEdgeThreads()) {
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
}
