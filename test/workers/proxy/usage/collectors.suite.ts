import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { EMPTY_USAGE, GATEWAY_OPS, type GatewayOp } from '../../../../protocol/gateway.ts';
import { PROVIDER_KINDS } from '../../../../protocol/providers.ts';
import { createUsageCollector } from '../../../../workers/proxy/usage/collectors.ts';
import { CHAT_USAGE, chatStream, collectJson, collectStream, RESPONSES_USAGE, sse } from './fixtures.ts';

const OPS = Object.keys(GATEWAY_OPS) as GatewayOp[];
const NOTHING = { ...EMPTY_USAGE, toolCalls: {}, responseId: null };

/** A body in each usage shape at once, so that any collector that reads usage finds something. */
const EVERY_SHAPE = {
  id: 'resp_1',
  usage: { ...CHAT_USAGE, ...RESPONSES_USAGE, cost: 0.5 },
  output: [],
  content: [],
  choices: [],
};

describe('createUsageCollector', () => {
  it('meters exactly the operations the gateway table marks as metered', () => {
    for (const op of OPS) {
      const usage = collectJson(op, EVERY_SHAPE);
      assert.equal(usage.inputTokens !== null, GATEWAY_OPS[op].metered, op);
    }
  });

  it('gives an unmetered operation an empty report, from bodies and from streams', () => {
    for (const op of OPS.filter((o) => !GATEWAY_OPS[o].metered)) {
      assert.deepEqual(collectJson(op, EVERY_SHAPE), NOTHING, op);
      assert.deepEqual(collectStream(op, chatStream({ includeUsage: true })), NOTHING, op);
    }
  });

  it('trusts usage.cost only from OpenRouter, or when the caller names no kind', () => {
    const body = { choices: [], usage: { prompt_tokens: 1, completion_tokens: 1, cost: 0.25 } };
    for (const kind of PROVIDER_KINDS)
      assert.equal(collectJson('chat.completions', body, kind).costUsd, kind === 'openrouter' ? 0.25 : null, kind);
    assert.equal(collectJson('chat.completions', body).costUsd, 0.25);
    assert.equal(collectJson('chat.completions', { usage: { cost: -1 } }, 'openrouter').costUsd, null);
  });

  it('never throws on malformed or unexpected input, and reads nothing from it', () => {
    const bodies: unknown[] = [
      null,
      undefined,
      'text',
      42,
      [],
      [{ usage: CHAT_USAGE }],
      { usage: 'x' },
      { usage: [] },
      { usage: null },
      { choices: {}, output: 'x', content: 7 },
      { output: [null, 1, { type: 5 }] },
    ];
    const events = [
      '',
      '[DONE',
      '{',
      'null',
      '[1,2]',
      '{"usage":{',
      '{"type":"response.completed","response":"x"}',
      '{"type":"response.created","response":{"id":5}}',
      '{"type":"response.output_item.added","item":"function_call_call\\""}',
      '{"type":"message_start","message":null}',
      '{"type":"content_block_start","content_block":["tool_use\\""]}',
      '{"choices":[null,{"delta":null},{"delta":{"tool_calls":{"name":"x"}}}],"usage":{}}',
      '{"choices":[{"delta":{"tool_calls":[null,{"function":{"name":""}}]}}],"usage":null}',
      `${'['.repeat(100_000)}"usage":{`,
    ];
    for (const op of OPS) {
      const collector = createUsageCollector(op, { providerKind: 'openrouter' });
      for (const body of bodies) collector.json(body);
      for (const data of events) {
        collector.event({ event: null, data });
        collector.event({ event: 'response.completed', data });
        collector.event({ event: 'content_block_start', data });
      }
      assert.deepEqual(collector.result(), NOTHING, op);
    }
  });

  it('returns a fresh report each time, unaffected by changes to an earlier one', () => {
    const collector = createUsageCollector('chat.completions');
    collector.json({ choices: [{ message: { tool_calls: [{ function: { name: 'a' } }] } }], usage: CHAT_USAGE });
    const first = collector.result();
    first.toolCalls.a = 99;
    first.inputTokens = 0;
    assert.deepEqual(collector.result().toolCalls, { a: 1 });
    assert.equal(collector.result().inputTokens, 82);
  });
});

describe('embeddings', () => {
  it('reads prompt and total tokens', () => {
    const body = {
      object: 'list',
      data: [{ object: 'embedding', embedding: [0.0023, -0.0093], index: 0 }],
      model: 'text-embedding-3-small',
      usage: { prompt_tokens: 8, total_tokens: 8 },
    };
    assert.deepEqual(collectJson('embeddings', body), { ...NOTHING, inputTokens: 8, totalTokens: 8 });
  });
});

describe('images.generations', () => {
  const GPT_IMAGE_USAGE = {
    total_tokens: 4250,
    input_tokens: 50,
    output_tokens: 4200,
    input_tokens_details: { text_tokens: 40, image_tokens: 10 },
  };

  it("reads gpt-image's usage", () => {
    const body = {
      created: 1713833628,
      data: [{ b64_json: 'iVBORw0KGgo=' }],
      background: 'opaque',
      output_format: 'png',
      quality: 'high',
      size: '1024x1024',
      usage: GPT_IMAGE_USAGE,
    };
    assert.deepEqual(collectJson('images.generations', body), {
      ...NOTHING,
      inputTokens: 50,
      outputTokens: 4200,
      totalTokens: 4250,
    });
  });

  it('reports nothing for a model that reports nothing (DALL-E)', () => {
    assert.deepEqual(
      collectJson('images.generations', {
        created: 1713833628,
        data: [{ url: 'https://example.invalid/a.png', revised_prompt: 'x' }],
      }),
      NOTHING,
    );
  });

  it('reads the usage of a streamed generation from its completed event', () => {
    const stream = sse([
      {
        event: 'image_generation.partial_image',
        data: JSON.stringify({
          type: 'image_generation.partial_image',
          b64_json: 'A'.repeat(4096),
          partial_image_index: 0,
          created_at: 1,
        }),
      },
      {
        event: 'image_generation.completed',
        data: JSON.stringify({
          type: 'image_generation.completed',
          b64_json: 'B'.repeat(4096),
          created_at: 2,
          usage: GPT_IMAGE_USAGE,
        }),
      },
    ]);
    assert.deepEqual(collectStream('images.generations', stream), {
      ...NOTHING,
      inputTokens: 50,
      outputTokens: 4200,
      totalTokens: 4250,
    });
  });
});
