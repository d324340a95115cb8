import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mergePreset } from '../../../protocol/preset-merge.ts';
import { jsonText } from '../../../protocol/json-text.ts';
import type { PresetView } from '../../../protocol/http/presets.ts';

const preset = (over: Partial<PresetView> = {}): PresetView => ({
  slug: 's',
  displayName: 's',
  model: 'p/m',
  parameters: { temperature: 0.1, max_tokens: 9, top_k: 4 },
  system: 'SYS',
  familyScope: ['styleA.chat_completions', 'styleB.messages'],
  createdAt: '',
  updatedAt: '',
  ...over,
});

test('chat: only chat parameter names are applied, request values win, system is prepended once', () => {
  const out = mergePreset('chat.completions', preset(), {
    model: 'x',
    temperature: 1,
    messages: [{ role: 'user', content: 'u' }],
  });
  assert.deepEqual(out, {
    temperature: 1,
    max_tokens: 9,
    model: 'x',
    messages: [
      { role: 'system', content: 'SYS' },
      { role: 'user', content: 'u' },
    ],
  });
});

test('chat: an existing system message is left alone', () => {
  const messages = [{ role: 'system', content: 'own' }];
  assert.deepEqual(mergePreset('chat.completions', preset(), { messages }).messages, messages);
});

test('styleB: top_k applies, system fills only when absent', () => {
  assert.deepEqual(mergePreset('messages', preset(), { messages: [] }), {
    temperature: 0.1,
    max_tokens: 9,
    top_k: 4,
    messages: [],
    system: 'SYS',
  });
  assert.equal(mergePreset('messages', preset(), { system: 'own' }).system, 'own');
});

test('token counting gets the system prompt but no sampling parameters', () => {
  assert.deepEqual(mergePreset('messages.count_tokens', preset(), { messages: [] }), { messages: [], system: 'SYS' });
});

/** `[[[...0...]]]` nested `depth` levels, built without recursion. */
function nested(depth: number): unknown {
  let value: unknown = 0;
  for (let i = 0; i < depth; i++) value = i % 2 === 0 ? [value] : { k: value };
  return value;
}

test(
  'regression W2.6: a body nested 5,000 levels merges into the text JSON.stringify would write, without a stack ' +
    'overflow',
  () => {
    const deep = nested(5000);
    const merged = mergePreset('chat.completions', preset(), {
      model: 'x',
      messages: [{ role: 'user', content: deep }],
    });
    assert.throws(() => JSON.stringify(merged), RangeError, 'the body is deep enough to overflow JSON.stringify');
    const text = jsonText(merged);
    const head =
      '{"temperature":0.1,"max_tokens":9,"model":"x","messages":[{"role":"system","content":"SYS"},' +
      '{"role":"user","content":';
    assert.ok(text.startsWith(head), text.slice(0, 200));
    assert.equal(text, head + '{"k":['.repeat(2500) + '0' + ']}'.repeat(2500) + '}]}');
  },
);
