import { describe } from 'node:test';

// The unit suites of the relay workers' (proxy, translate, shared) code, in one process.
// Each suite below was a test file of its own; it keeps its tests and hooks, and they run one after another
// in this one process, which loads tsx and the shared modules once (test/SPEED.md).

describe('proxy/list-models', async () => {
  await import('./proxy/list-models.suite.ts');
});
describe('proxy/omitted-tools-log', async () => {
  await import('./proxy/omitted-tools-log.suite.ts');
});
describe('proxy/providers/anthropic', async () => {
  await import('./proxy/providers/anthropic.suite.ts');
});
describe('proxy/providers/index', async () => {
  await import('./proxy/providers/index.suite.ts');
});
describe('proxy/providers/llamacpp', async () => {
  await import('./proxy/providers/llamacpp.suite.ts');
});
describe('proxy/providers/ollama', async () => {
  await import('./proxy/providers/ollama.suite.ts');
});
describe('proxy/providers/openai', async () => {
  await import('./proxy/providers/openai.suite.ts');
});
describe('proxy/providers/openai_compatible', async () => {
  await import('./proxy/providers/openai_compatible.suite.ts');
});
describe('proxy/providers/openrouter', async () => {
  await import('./proxy/providers/openrouter.suite.ts');
});
describe('proxy/providers/query', async () => {
  await import('./proxy/providers/query.suite.ts');
});
describe('proxy/relay', async () => {
  await import('./proxy/relay.suite.ts');
});
describe('proxy/scrub', async () => {
  await import('./proxy/scrub.suite.ts');
});
describe('proxy/translate-tap', async () => {
  await import('./proxy/translate-tap.suite.ts');
});
describe('proxy/upstream-body', async () => {
  await import('./proxy/upstream-body.suite.ts');
});
describe('proxy/usage/chat-completions', async () => {
  await import('./proxy/usage/chat-completions.suite.ts');
});
describe('proxy/usage/collectors', async () => {
  await import('./proxy/usage/collectors.suite.ts');
});
describe('proxy/usage/messages', async () => {
  await import('./proxy/usage/messages.suite.ts');
});
describe('proxy/usage/responses', async () => {
  await import('./proxy/usage/responses.suite.ts');
});
describe('proxy/usage/estimate', async () => {
  await import('./proxy/usage/estimate.suite.ts');
});
describe('proxy/usage/stream-tap', async () => {
  await import('./proxy/usage/stream-tap.suite.ts');
});
describe('shared/body-arena', async () => {
  await import('./shared/body-arena.suite.ts');
});
describe('shared/port-channel', async () => {
  await import('./shared/port-channel.suite.ts');
});
describe('shared/relay-over-port', async () => {
  await import('./shared/relay-over-port.suite.ts');
});
describe('shared/sse', async () => {
  await import('./shared/sse.suite.ts');
});
describe('shared/upstream-errors', async () => {
  await import('./shared/upstream-errors.suite.ts');
});
describe('translate/field-limits', async () => {
  await import('./translate/field-limits.suite.ts');
});
describe('translate/golden', async () => {
  await import('./translate/golden.suite.ts');
});
describe('translate/responses-chat', async () => {
  await import('./translate/responses-chat.suite.ts');
});
describe('translate/responses-messages', async () => {
  await import('./translate/responses-messages.suite.ts');
});
describe('translate/responses-tools', async () => {
  await import('./translate/responses-tools.suite.ts');
});
describe('translate/responses-messages-tools', async () => {
  await import('./translate/responses-messages-tools.suite.ts');
});
describe('translate/responses-chat-tools', async () => {
  await import('./translate/responses-chat-tools.suite.ts');
});
