import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { GatewayOp } from '../../../../protocol/gateway.ts';
import {
  createStreamTap,
  injectStreamUsage,
  type StreamTapOptions,
} from '../../../../workers/proxy/usage/stream-tap.ts';
import {
  bytes,
  chatStream,
  type ChatStreamOptions,
  collectStream,
  cuts,
  messagesStream,
  OPENROUTER_BASE,
  OPENROUTER_USAGE,
  responsesStream,
  sse,
  TEXT_CHOICES,
  text,
} from './fixtures.ts';

/**
 * Runs chunks through a tap, copying what it forwards at once (as the relay does) and then scribbling over each input
 * chunk, as undici may reuse its buffers.
 */
function run(op: GatewayOp, options: StreamTapOptions, chunks: Uint8Array[]) {
  const tap = createStreamTap(op, options);
  const out: Uint8Array[] = [];
  for (const chunk of chunks) {
    const copy = new Uint8Array(chunk);
    const forwarded = tap.push(copy);
    if (forwarded !== null) out.push(new Uint8Array(forwarded));
    copy.fill(0x21);
  }
  const { tail, usage } = tap.end();
  if (tail !== null) out.push(new Uint8Array(tail));
  const joined = new Uint8Array(out.reduce((n, c) => n + c.length, 0));
  out.reduce((at, c) => (joined.set(c, at), at + c.length), 0);
  return { out: joined, usage };
}

const CHAT_TOKENS = {
  inputTokens: 82,
  outputTokens: 48,
  cachedInputTokens: 64,
  reasoningTokens: 16,
  totalTokens: 130,
  costUsd: null,
};

describe('createStreamTap, passing through', () => {
  it('forwards the very same chunk object at once and still reads usage', () => {
    const data = bytes(chatStream({ includeUsage: true }));
    const tap = createStreamTap('chat.completions', { stripInjectedUsage: false, providerKind: 'openai' });
    const first = data.subarray(0, 100);
    const second = data.subarray(100);
    assert.equal(tap.push(first), first);
    assert.equal(tap.push(second), second);
    const { tail, usage } = tap.end();
    assert.equal(tail, null);
    assert.deepEqual(usage, { ...CHAT_TOKENS, toolCalls: { get_weather: 1, get_time: 1 }, responseId: null });
  });

  for (const [op, stream, expected] of [
    [
      'chat.completions',
      chatStream({ includeUsage: true, choices: TEXT_CHOICES }),
      { totalTokens: 130, toolCalls: {}, responseId: null },
    ],
    [
      'responses.create',
      responsesStream(),
      {
        totalTokens: 380,
        toolCalls: { get_weather: 1, web_search_call: 1 },
        responseId: 'resp_67ccd2bed1ec8190b14f964abc054267',
      },
    ],
    [
      'messages',
      messagesStream({ eol: '\r\n' }),
      { totalTokens: 2661, toolCalls: { get_weather: 1 }, responseId: null },
    ],
  ] as const) {
    it(`reads the same ${op} usage whatever the chunking`, () => {
      const data = bytes(stream);
      for (const { label, chunks } of cuts(data)) {
        const { out, usage } = run(op, { stripInjectedUsage: false }, chunks);
        assert.deepEqual(out, data, label);
        assert.deepEqual(
          { totalTokens: usage.totalTokens, toolCalls: usage.toolCalls, responseId: usage.responseId },
          expected,
          label,
        );
      }
    });
  }

  it('leaves an unmetered binary answer (speech) alone', () => {
    const audio = Uint8Array.from({ length: 64 }, (_, i) => (i * 37) % 256);
    const tap = createStreamTap('audio.speech', { stripInjectedUsage: false });
    assert.equal(tap.push(audio), audio);
    assert.deepEqual(tap.end(), {
      tail: null,
      usage: {
        inputTokens: null,
        outputTokens: null,
        cachedInputTokens: null,
        reasoningTokens: null,
        totalTokens: null,
        costUsd: null,
        toolCalls: {},
        responseId: null,
      },
    });
  });

  it('strips only chat completions, the one operation where the relay injects', () => {
    const data = bytes(responsesStream());
    const tap = createStreamTap('responses.create', { stripInjectedUsage: true });
    assert.equal(tap.push(data), data);
  });
});

describe('createStreamTap, stripping injected usage', () => {
  const variants: [string, Omit<ChatStreamOptions, 'includeUsage'>][] = [
    ['two parallel tool calls, LF', {}],
    ['multi-byte text, CRLF', { choices: TEXT_CHOICES, eol: '\r\n' }],
    ['multi-byte text, CR', { choices: TEXT_CHOICES, eol: '\r' }],
    ['usage written first in each chunk', { usageFirst: true }],
    [
      'OpenRouter with keep-alive comments',
      { base: OPENROUTER_BASE, usage: OPENROUTER_USAGE, choices: TEXT_CHOICES, comments: ['OPENROUTER PROCESSING'] },
    ],
  ];

  for (const [label, options] of variants) {
    it(`gives the client byte for byte the stream it would have had without the injection: ${label}`, () => {
      const injected = bytes(chatStream({ ...options, includeUsage: true }));
      const plain = bytes(chatStream({ ...options, includeUsage: false }));
      assert.notDeepEqual(injected, plain);
      const expectedTotal = options.usage === undefined ? 130 : 196;
      for (const { label: cut, chunks } of cuts(injected)) {
        const { out, usage } = run('chat.completions', { stripInjectedUsage: true }, chunks);
        assert.equal(text(out), text(plain), cut);
        assert.deepEqual(out, plain, cut);
        assert.equal(usage.totalTokens, expectedTotal, cut);
      }
    });
  }

  it('reads the usage it strips, with the tool calls', () => {
    const { usage } = run('chat.completions', { stripInjectedUsage: true, providerKind: 'openai' }, [
      bytes(chatStream({ includeUsage: true })),
    ]);
    assert.deepEqual(usage, { ...CHAT_TOKENS, toolCalls: { get_weather: 1, get_time: 1 }, responseId: null });
  });

  it('forwards each event once its blank line has arrived, and holds an unfinished one', () => {
    const tap = createStreamTap('chat.completions', { stripInjectedUsage: true });
    const out = tap.push(bytes('data: {"choices":[],"usage":null}\n\ndata: {"choi'));
    assert.equal(out && text(out), 'data: {"choices":[]}\n\n');
    assert.equal(tap.push(bytes('ces":[')), null);
    const done = tap.push(bytes(']}\n\n'));
    assert.equal(done && text(done), 'data: {"choices":[]}\n\n');
  });

  it(
    'drops a usage-only chunk whose choices are null or missing, and keeps usage that rides on a chunk with ' +
      'choices',
    () => {
      const stream = sse([
        {
          data:
            '{"id":"a","choices":[{"index":0,"delta":{"content":"x"}}],"usage":{"prompt_tokens":1,' +
            '"completion_tokens":1}}',
        },
        { data: '{"id":"a","choices":null,"usage":{"prompt_tokens":3,"completion_tokens":4}}' },
        { data: '{"id":"a","usage":{"prompt_tokens":3,"completion_tokens":5}}' },
        { data: '[DONE]' },
      ]);
      const { out, usage } = run('chat.completions', { stripInjectedUsage: true }, [bytes(stream)]);
      assert.equal(
        text(out),
        sse([
          {
            data:
              '{"id":"a","choices":[{"index":0,"delta":{"content":"x"}}],"usage":{"prompt_tokens":1,' +
              '"completion_tokens":1}}',
          },
          { data: '[DONE]' },
        ]),
      );
      assert.equal(usage.outputTokens, 5);
    },
  );

  it('removes "usage": null with any whitespace, as the only member too, and leaves content about it alone', () => {
    const content = JSON.stringify({ choices: [{ delta: { content: 'say "usage":null, ok' } }] }).slice(0, -1);
    const stream = sse([
      { data: '{"a": 1, "usage" : null }' },
      { data: '{ "usage": null , "a": 1}' },
      { data: '{"usage":null}' },
      { data: `${content},"usage":null}` },
    ]);
    const { out } = run('chat.completions', { stripInjectedUsage: true }, [bytes(stream)]);
    assert.equal(
      text(out),
      sse([{ data: '{"a": 1 }' }, { data: '{ "a": 1}' }, { data: '{}' }, { data: `${content}}` }]),
    );
  });

  it('forwards an unterminated last event at the end, minus the injected member', () => {
    const { out, usage } = run('chat.completions', { stripInjectedUsage: true }, [
      bytes('data: {"choices":[],"usage":null}\n\ndata: {"choices":[{"index":0}],"usage":null}'),
    ]);
    assert.equal(text(out), 'data: {"choices":[]}\n\ndata: {"choices":[{"index":0}]}');
    assert.equal(usage.totalTokens, null);
  });

  it('drops an unterminated usage-only chunk at the end without metering it', () => {
    const { out, usage } = run('chat.completions', { stripInjectedUsage: true }, [
      bytes('data: [DONE]\n\ndata: {"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}'),
    ]);
    assert.equal(text(out), 'data: [DONE]\n\n');
    assert.equal(usage.inputTokens, null);
  });

  it('keeps bytes that are not valid UTF-8 in events it does not change', () => {
    const data = Uint8Array.from([
      ...bytes('data: {"choices":[{"delta":{"content":"'),
      0xff,
      0xc3,
      ...bytes('"}}]}\n\n'),
    ]);
    const { out } = run('chat.completions', { stripInjectedUsage: true }, [data]);
    assert.deepEqual(out, data);
  });
});

describe('injectStreamUsage', () => {
  it('asks a stream for usage when the client did not', () => {
    const body: Record<string, unknown> = { model: 'gpt-4o', stream: true, messages: [] };
    assert.equal(injectStreamUsage(body), true);
    assert.deepEqual(body.stream_options, { include_usage: true });
  });

  it('keeps the other stream_options members', () => {
    const body: Record<string, unknown> = { stream: true, stream_options: { include_obfuscation: false } };
    assert.equal(injectStreamUsage(body), true);
    assert.deepEqual(body.stream_options, { include_obfuscation: false, include_usage: true });
  });

  it('overrides an explicit include_usage: false, since the tap takes it back', () => {
    const body: Record<string, unknown> = { stream: true, stream_options: { include_usage: false } };
    assert.equal(injectStreamUsage(body), true);
    assert.deepEqual(body.stream_options, { include_usage: true });
  });

  it('changes nothing when the client asked for usage, for a non-streamed call, or with malformed options', () => {
    for (const body of [
      { stream: true, stream_options: { include_usage: true } },
      { stream: false },
      {},
      { stream: 'true' },
      { stream: true, stream_options: 'x' },
      { stream: true, stream_options: [] },
    ]) {
      const before = structuredClone(body);
      assert.equal(injectStreamUsage(body), false, JSON.stringify(before));
      assert.deepEqual(body, before);
    }
  });
});

describe('createStreamTap, reading only the blocks that can matter', () => {
  const streams: [GatewayOp, string, string][] = [
    ['chat.completions', 'tool calls, LF', chatStream({ includeUsage: true })],
    ['chat.completions', 'text, CR', chatStream({ includeUsage: true, choices: TEXT_CHOICES, eol: '\r' })],
    ['chat.completions', 'usage first, CRLF', chatStream({ includeUsage: true, usageFirst: true, eol: '\r\n' })],
    [
      'chat.completions',
      'OpenRouter comments',
      chatStream({
        includeUsage: true,
        base: OPENROUTER_BASE,
        usage: OPENROUTER_USAGE,
        comments: ['OPENROUTER PROCESSING'],
      }),
    ],
    ['responses.create', 'without event lines', responsesStream({ withEventLines: false })],
    ['responses.create', 'incomplete', responsesStream({ terminal: 'response.incomplete' })],
    ['responses.create', 'cut before its end', responsesStream({ terminal: null })],
    ['messages', 'without event lines', messagesStream({ withEventLines: false })],
    ['messages', 'CR', messagesStream({ eol: '\r', deltaUsage: { input_tokens: 9, output_tokens: 12 } })],
    [
      'images.generations',
      'partial images',
      sse([
        {
          event: 'image_generation.partial_image',
          data: JSON.stringify({ type: 'image_generation.partial_image', b64_json: 'iVBORw0KGgo'.repeat(50) }),
        },
        {
          event: 'image_generation.completed',
          data: JSON.stringify({
            type: 'image_generation.completed',
            usage: { input_tokens: 50, output_tokens: 4160, total_tokens: 4210 },
          }),
        },
      ]),
    ],
  ];

  for (const [op, label, stream] of streams) {
    it(`meters ${op} (${label}) as a collector fed every event does, whatever the chunking`, () => {
      const expected = collectStream(op, stream, 'openrouter');
      assert.notEqual(
        expected.totalTokens ?? Object.keys(expected.toolCalls).length,
        0,
        'the stream has something to meter',
      );
      for (const { label: cut, chunks } of cuts(bytes(stream))) {
        assert.deepEqual(
          run(op, { stripInjectedUsage: false, providerKind: 'openrouter' }, chunks).usage,
          expected,
          cut,
        );
      }
    });
  }

  it('reads a usage chunk whose "usage" key is cut between two chunks, passing it through or dropping it', () => {
    const usage = '{"id":"a","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}';
    const stream = bytes(
      sse([
        { data: '{"id":"a","choices":[{"index":0,"delta":{"content":"x"}}],"usage":null}' },
        { data: usage },
        { data: '[DONE]' },
      ]),
    );
    const at = text(stream).indexOf('"usage":{') + 3;
    for (const stripInjectedUsage of [false, true]) {
      const { out, usage: metered } = run('chat.completions', { stripInjectedUsage }, [
        stream.subarray(0, at),
        stream.subarray(at),
      ]);
      assert.deepEqual([metered.inputTokens, metered.outputTokens], [3, 4]);
      assert.equal(
        text(out),
        stripInjectedUsage
          ? sse([{ data: '{"id":"a","choices":[{"index":0,"delta":{"content":"x"}}]}' }, { data: '[DONE]' }])
          : text(stream),
      );
    }
  });

  it('reads a usage object whose JSON goes on in the next data line', () => {
    const stream = 'data: {"choices":[],"usage":\ndata: {"prompt_tokens":3,"completion_tokens":4}}\n\ndata: [DONE]\n\n';
    for (const stripInjectedUsage of [false, true]) {
      assert.equal(run('chat.completions', { stripInjectedUsage }, [bytes(stream)]).usage.totalTokens, 7);
    }
  });

  it('ignores usage after [DONE], as the collector does', () => {
    const stream = sse([
      { data: '[DONE]' },
      { data: '{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":4}}' },
    ]);
    assert.equal(collectStream('chat.completions', stream).inputTokens, null);
    assert.equal(run('chat.completions', { stripInjectedUsage: false }, [bytes(stream)]).usage.inputTokens, null);
  });

  it('goes by the last event line of a block, as the collector does', () => {
    const delta = '{"type":"message_delta","delta":{},"usage":{"output_tokens":7}}';
    for (const [block, outputTokens] of [
      [`event: ping\nevent: message_delta\ndata: ${delta}\n\n`, 7],
      [`event: message_delta\nevent: ping\ndata: ${delta}\n\n`, null],
      [`event: content_block_delta\ndata: ${delta}\n\n`, null],
      [`event: message\ndata: ${delta}\n\n`, 7],
      [`id: 4\nevent: message_delta\ndata: ${delta}\n\n`, 7],
    ] as const) {
      assert.equal(collectStream('messages', block).outputTokens, outputTokens, block);
      assert.equal(
        run('messages', { stripInjectedUsage: false }, [bytes(block)]).usage.outputTokens,
        outputTokens,
        block,
      );
    }
  });
});
