import { describe } from 'node:test';
import { withTwoEdgeThreads } from '../helpers/edge-threads.ts';
import { inProcessDefaults } from '../helpers/in-process.ts';

// Management suites with every route reaching the control plane's ports over a MessagePort
// (service/control-channel.ts), as a thread apart from the control plane reaches them: each argument and answer
// is cloned, a ServiceError crosses as data, and a route that forgets to await its port fails here (a port called
// in the route's own thread answers at once, and a missing await goes unseen). These suites moved here from the
// control, gateway and Gauge families; the direct calls the service makes by default are what every other
// suite, the CLI and the dashboard tests use.
inProcessDefaults.controlChannel = true;
// And with two edge threads where uWebSockets.js loads (service/edge-threads.ts): a route reached on the second
// thread is forwarded to the main thread, where it calls its port over the channel.
withTwoEdgeThreads();

describe('settings', async () => {
  await import('./settings.suite.ts');
});
describe('audit', async () => {
  await import('./audit.suite.ts');
});
describe('providers', async () => {
  await import('./providers.suite.ts');
});
describe('provider-credentials', async () => {
  await import('./provider-credentials.suite.ts');
});
describe('models', async () => {
  await import('./models.suite.ts');
});
describe('presets', async () => {
  await import('./presets.suite.ts');
});
describe('route-packs', async () => {
  await import('./route-packs.suite.ts');
});
describe('limits', async () => {
  await import('./limits.suite.ts');
});
describe('limits-settle', async () => {
  await import('./limits-settle.suite.ts');
});
describe('loop-brake', async () => {
  await import('./loop-brake.suite.ts');
});
describe('gauge-budgets', async () => {
  await import('./gauge-budgets.suite.ts');
});
describe('gauge-alerts', async () => {
  await import('./gauge-alerts.suite.ts');
});
describe('gauge-auth-sessions', async () => {
  await import('./gauge-auth-sessions.suite.ts');
});
describe('jobs-events', async () => {
  await import('./jobs-events.suite.ts');
});
describe('runtime-discovery', async () => {
  await import('./runtime-discovery.suite.ts');
});
describe('token-race', async () => {
  await import('./token-race.suite.ts');
});
