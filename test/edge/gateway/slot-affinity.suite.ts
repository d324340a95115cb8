import assert from 'node:assert/strict';
import { test } from 'node:test';
import type { ProviderRecord, ResolvedModel } from '../../../protocol/catalog.ts';
import type { GatewayOp } from '../../../protocol/gateway.ts';
import { slotOf, slottedBody } from '../../../edge/gateway/slot-affinity.ts';

// The slot a session's llama-server call asks for (edge/gateway/slot-affinity.ts).

const resolved = (kind: ProviderRecord['kind']) =>
  ({ provider: { id: 'llama', kind } as ProviderRecord, model: {} }) as unknown as ResolvedModel;
const catalog = (slots: number | null) => ({ slotsOf: () => slots });
const body = { model: 'llama/m', messages: [], user: 'agent-1' };
const slotted = (kind: ProviderRecord['kind'], op: GatewayOp = 'chat.completions', slots: number | null = 4) =>
  slottedBody(op, resolved(kind), catalog(slots), {}, () => ({ ...body }));

test('a session keeps one slot, within the slots; sessions spread over them', () => {
  const slots = new Set<number>();
  for (let i = 0; i < 64; i++) {
    const s = slotOf('llama', `agent-${i}`, 4);
    assert.equal(slotOf('llama', `agent-${i}`, 4), s);
    assert.ok(s >= 0 && s < 4);
    slots.add(s);
  }
  assert.equal(slots.size, 4);
  assert.equal(slotOf('llama', 'x', 1), 0);
});

test('only llama-server chat calls of a session with known slots get id_slot and cache_prompt', () => {
  const got = slotted('llamacpp');
  assert.deepEqual(got, { ...body, id_slot: slotOf('llama', 'agent-1', 4), cache_prompt: true });
  for (const kind of ['ollama', 'openai', 'openai_compatible', 'anthropic', 'embedded'] as const)
    assert.equal(slotted(kind), null, kind);
  assert.equal(slotted('llamacpp', 'messages'), null);
  assert.equal(slotted('llamacpp', 'embeddings'), null);
  assert.equal(slotted('llamacpp', 'chat.completions', null), null);
  // No session named: nothing changes; a header names one as well as the body does.
  assert.equal(
    slottedBody('chat.completions', resolved('llamacpp'), catalog(4), {}, () => ({ model: 'm' })),
    null,
  );
  const byHeader = slottedBody(
    'chat.completions',
    resolved('llamacpp'),
    catalog(4),
    { 'x-switchyard-session': 'a' },
    () => ({}),
  );
  assert.equal(byHeader?.id_slot, slotOf('llama', 'a', 4));
});
