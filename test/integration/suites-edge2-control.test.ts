import { describe } from 'node:test';
import { withTwoEdgeThreads } from '../helpers/edge-threads.ts';

// The control family (suites-control.test.ts) again with two edge threads
// (service/edge-threads.ts): each in-process service listens from the main thread and one edge thread, and the
// kernel spreads each suite's connections between them.
if (withTwoEdgeThreads()) {
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
}
