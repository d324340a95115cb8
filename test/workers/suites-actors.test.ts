import { describe } from 'node:test';

// The unit suites of the actor workers' (gauge, hardware, meter, runtime) code, in one process.
// Each suite below was a test file of its own; it keeps its tests and hooks, and they run one after another
// in this one process, which loads tsx and the shared modules once (test/SPEED.md).

describe('gauge/actor', async () => {
  await import('./gauge/actor.suite.ts');
});
describe('gauge/collectors/anthropic', async () => {
  await import('./gauge/collectors/anthropic.suite.ts');
});
describe('gauge/collectors/claude-code', async () => {
  await import('./gauge/collectors/claude-code.suite.ts');
});
describe('gauge/collectors/codex', async () => {
  await import('./gauge/collectors/codex.suite.ts');
});
describe('gauge/collectors/github-copilot', async () => {
  await import('./gauge/collectors/github-copilot.suite.ts');
});
describe('gauge/collectors/local-logs', async () => {
  await import('./gauge/collectors/local-logs.suite.ts');
});
describe('gauge/collectors/openai', async () => {
  await import('./gauge/collectors/openai.suite.ts');
});
describe('gauge/collectors/openrouter', async () => {
  await import('./gauge/collectors/openrouter.suite.ts');
});
describe('gauge/collectors/statuspage', async () => {
  await import('./gauge/collectors/statuspage.suite.ts');
});
describe('gauge/core', async () => {
  await import('./gauge/core.suite.ts');
});
describe('gauge/semaphore', async () => {
  await import('./gauge/semaphore.suite.ts');
});
describe('gauge/sanitize', async () => {
  await import('./gauge/sanitize.suite.ts');
});
describe('gauge/scheduler', async () => {
  await import('./gauge/scheduler.suite.ts');
});
describe('hardware/actor', async () => {
  await import('./hardware/actor.suite.ts');
});
describe('hardware/probe', async () => {
  await import('./hardware/probe.suite.ts');
});
describe('hardware/routes', async () => {
  await import('./hardware/routes.suite.ts');
});
describe('meter/actor', async () => {
  await import('./meter/actor.suite.ts');
});
describe('meter/journal-replay', async () => {
  await import('./meter/journal-replay.suite.ts');
});
describe('meter/aggregate', async () => {
  await import('./meter/aggregate.suite.ts');
});
describe('meter/price-db', async () => {
  await import('./meter/price-db.suite.ts');
});
describe('runtime/gguf-header', async () => {
  await import('./runtime/gguf-header.suite.ts');
});
describe('runtime/keep-alive', async () => {
  await import('./runtime/keep-alive.suite.ts');
});
describe('runtime/library-watch', async () => {
  await import('./runtime/library-watch.suite.ts');
});
describe('runtime/placement', async () => {
  await import('./runtime/placement.suite.ts');
});
describe('runtime/probe', async () => {
  await import('./runtime/probe.suite.ts');
});
describe('runtime/runtime-pool', async () => {
  await import('./runtime/runtime-pool.suite.ts');
});
describe('runtime/tools', async () => {
  await import('./runtime/tools.suite.ts');
});
