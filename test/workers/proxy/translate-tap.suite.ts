import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { TRANSLATORS, type TranslateContext } from '../../../workers/translate/index.ts';
import { createTranslatingTap } from '../../../workers/proxy/translate-tap.ts';

// The relay's tap for translated streams: the client gets the translator's events, and the meter gets the
// upstream's own usage, read by the upstream protocol's collector, counter for counter.

const ROOT = join(import.meta.dirname, '../../fixtures/translate');
const ctx = (providerKind: TranslateContext['providerKind']): TranslateContext => ({
  upstreamModelId: 'upstream-model',
  clientModel: 'client-model',
  providerKind,
  streamUsage: true,
  now: () => 1700000000,
});

function run(upstream: Buffer, tap: ReturnType<typeof createTranslatingTap>): { text: string; usage: unknown } {
  const parts: Uint8Array[] = [];
  // Pieces that cut events, lines and multi-byte characters alike.
  for (let at = 0; at < upstream.length; at += 13) {
    const out = tap.push(upstream.subarray(at, at + 13));
    if (out !== null) parts.push(out);
  }
  const { tail, usage } = tap.end();
  if (tail !== null) parts.push(tail);
  return { text: Buffer.concat(parts).toString('utf8'), usage };
}

test('a chat stream translated for a styleB client: the chat usage is metered exactly, once', () => {
  const dir = join(ROOT, 'messages-over-chat');
  const mapper = TRANSLATORS['styleB.messages<-styleA.chat_completions'].stream(ctx('openai'), { includeUsage: true });
  const tap = createTranslatingTap('chat.completions', mapper, 'openai');
  const { text, usage } = run(readFileSync(join(dir, 'stream-parallel-tool-calls.upstream.sse')), tap);
  assert.equal(text, readFileSync(join(dir, 'stream-parallel-tool-calls.client.sse'), 'utf8'));
  assert.equal(tap.closed(), true);
  assert.deepEqual(usage, {
    inputTokens: 31,
    outputTokens: 17,
    cachedInputTokens: 8,
    reasoningTokens: 5,
    totalTokens: 48,
    costUsd: null,
    toolCalls: { get_weather: 1, get_time: 1 },
    responseId: null,
  });
});

test(
  'a Messages stream translated for a styleA client: message_start and message_delta merged, cache writes ' + 'kept',
  () => {
    const dir = join(ROOT, 'chat-over-messages');
    const mapper = TRANSLATORS['styleA.chat_completions<-styleB.messages'].stream(ctx('anthropic'), {
      includeUsage: false,
    });
    const tap = createTranslatingTap('messages', mapper, 'anthropic');
    const { text, usage } = run(readFileSync(join(dir, 'stream-parallel-tool-use-no-usage.upstream.sse')), tap);
    assert.equal(text, readFileSync(join(dir, 'stream-parallel-tool-use-no-usage.client.sse'), 'utf8'));
    assert.equal(text.includes('"usage"'), false, 'no usage for a client that did not ask');
    assert.deepEqual(usage, {
      inputTokens: 31 + 3 + 8,
      outputTokens: 17,
      cachedInputTokens: 8,
      reasoningTokens: null,
      totalTokens: 42 + 17,
      costUsd: null,
      toolCalls: { get_weather: 1, get_time: 1 },
      responseId: null,
      cacheWriteTokens: 3,
      cacheWrite1hTokens: 0,
    });
  },
);

test('an upstream stream that ends without its closing event still closes the client stream', () => {
  const mapper = TRANSLATORS['styleB.messages<-styleA.chat_completions'].stream(ctx('openai'), { includeUsage: true });
  const tap = createTranslatingTap('chat.completions', mapper, 'openai');
  const chunk = {
    id: 'c',
    object: 'chat.completion.chunk',
    choices: [{ index: 0, delta: { content: 'Hi' }, finish_reason: null }],
  };
  const { text } = run(Buffer.from(`data: ${JSON.stringify(chunk)}\n\n`), tap);
  const events = [...text.matchAll(/^event: (\w+)$/gm)].map((m) => m[1]);
  assert.deepEqual(events, [
    'message_start',
    'content_block_start',
    'content_block_delta',
    'content_block_stop',
    'message_delta',
    'message_stop',
  ]);
});

test('thinking tokens a Messages upstream reports are metered as reasoning and shown to the chat client', () => {
  const dir = join(ROOT, 'chat-over-messages');
  const mapper = TRANSLATORS['styleA.chat_completions<-styleB.messages'].stream(ctx('anthropic'), {
    includeUsage: true,
  });
  const tap = createTranslatingTap('messages', mapper, 'anthropic');
  const { text, usage } = run(readFileSync(join(dir, 'stream-thinking-text-usage.upstream.sse')), tap);
  assert.equal(text, readFileSync(join(dir, 'stream-thinking-text-usage.client.sse'), 'utf8'));
  assert.equal((usage as { reasoningTokens: number }).reasoningTokens, 5);
  assert.match(text, /"completion_tokens_details":\{"reasoning_tokens":5\}/);
});
