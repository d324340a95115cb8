import { describe } from 'node:test';

// The unit suites of edge/, in one process.
// Each suite below was a test file of its own; it keeps its tests and hooks, and they run one after another
// in this one process, which loads tsx and the shared modules once (test/SPEED.md).

describe('gateway/count-tokens', async () => {
  await import('./gateway/count-tokens.suite.ts');
});
describe('gateway/multipart', async () => {
  await import('./gateway/multipart.suite.ts');
});
describe('gateway/plain-names', async () => {
  await import('./gateway/plain-names.suite.ts');
});
describe('gateway/relay-hooks', async () => {
  await import('./gateway/relay-hooks.suite.ts');
});
describe('gateway/relay-response', async () => {
  await import('./gateway/relay-response.suite.ts');
});
describe('http/after-answers', async () => {
  await import('./http/after-answers.suite.ts');
});
describe('http/app', async () => {
  await import('./http/app.suite.ts');
});
describe('http/auth', async () => {
  await import('./http/auth.suite.ts');
});
describe('http/choose-edge', async () => {
  await import('./http/choose-edge.suite.ts');
});
describe('http/cors', async () => {
  await import('./http/cors.suite.ts');
});
describe('http/event-stream', async () => {
  await import('./http/event-stream.suite.ts');
});
describe('http/forward', async () => {
  await import('./http/forward.suite.ts');
});
describe('http/open-connections', async () => {
  await import('./http/open-connections.suite.ts');
});
describe('http/host-check', async () => {
  await import('./http/host-check.suite.ts');
});
describe('http/json-body-poison-filter', async () => {
  await import('./http/json-body-poison-filter.suite.ts');
});
describe('http/json-body', async () => {
  await import('./http/json-body.suite.ts');
});
describe('http/json-scan', async () => {
  await import('./http/json-scan.suite.ts');
});
describe('http/log', async () => {
  await import('./http/log.suite.ts');
});
describe('http/multipart-model', async () => {
  await import('./http/multipart-model.suite.ts');
});
describe('http/router', async () => {
  await import('./http/router.suite.ts');
});
describe('http/server-connection', async () => {
  await import('./http/server-connection.suite.ts');
});
describe('http/server', async () => {
  await import('./http/server.suite.ts');
});
describe('http/slow-clients', async () => {
  await import('./http/slow-clients.suite.ts');
});
describe('routes/dashboard', async () => {
  await import('./routes/dashboard.suite.ts');
});
describe('routes/pairing-close', async () => {
  await import('./routes/pairing-close.suite.ts');
});
describe('routes/usage', async () => {
  await import('./routes/usage.suite.ts');
});
describe('gateway/key-pool', async () => {
  await import('./gateway/key-pool.suite.ts');
});
describe('gateway/slot-affinity', async () => {
  await import('./gateway/slot-affinity.suite.ts');
});
describe('gateway/responses-socket', async () => {
  await import('./gateway/responses-socket.suite.ts');
});
describe('gateway/admission', async () => {
  await import('./gateway/admission.suite.ts');
});
