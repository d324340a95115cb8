import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import * as anthropicFake from './anthropic.ts';
import * as openaiFake from './openai.ts';
import { parseSse, postJson } from './sse-client.ts';

// What a test can observe and break about a streamed answer, and the typed-event framing as it is on the
// wire (event name = data.type, sequence numbers, Anthropic's ping).

describe('stream controls', () => {
  let fake: openaiFake.OpenAIFake;
  const chat = (signal?: AbortSignal): Promise<Response> =>
    postJson(`${fake.baseUrl}/chat/completions`, { model: 'm', messages: [], stream: true }, {}, signal);

  before(async () => {
    fake = await openaiFake.start();
  });
  after(() => fake.close());

  it('sees a client that closes mid-stream, with when and after how many events', async () => {
    fake.slowStreamNext({ chunkDelayMs: 1000 });
    const started = fake.nextStream();
    const aborter = new AbortController();
    const response = await chat(aborter.signal);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    await reader.read();
    const record = await started;
    assert.equal(record.end, null, 'still open while the client reads');
    aborter.abort();
    await reader.read().catch(() => undefined);
    const end = await fake.lastStreamEnded();
    assert.equal(end.by, 'client-closed');
    assert.ok(end.eventsSent < openaiFake.DEFAULT_OUTPUT.chunks, `${end.eventsSent} events were sent before the close`);
    assert.equal(fake.lastStreamClosedByClient(), true);
    assert.equal(typeof end.at, 'number');
  });

  it('a stream read to the end is completed, not closed by the client', async () => {
    await (await chat()).text();
    assert.equal((await fake.lastStreamEnded()).by, 'completed');
    assert.equal(fake.lastStreamClosedByClient(), false);
  });

  it('streamErrorNext: a chat stream carries OpenAI’s error data event, which the SDK raises', async () => {
    fake.streamErrorNext({ afterChunks: 2, type: 'server_error', message: 'boom mid-stream' });
    const client = new OpenAI({ baseURL: fake.baseUrl, apiKey: 'k', maxRetries: 0 });
    const stream = await client.chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      stream: true,
    });
    await assert.rejects(
      (async () => {
        for await (const chunk of stream) void chunk;
      })(),
      (err: unknown) => err instanceof OpenAI.APIError && err.message.includes('boom mid-stream'),
    );
  });

  it('the Responses stream names each event by its type and numbers them from 0', async () => {
    const events = parseSse(
      await (await postJson(`${fake.baseUrl}/responses`, { model: 'm', input: 'hi', stream: true })).text(),
    );
    const data = events.map((e) => JSON.parse(e.data) as { type: string; sequence_number: number });
    assert.deepEqual(
      events.map((e) => e.event),
      data.map((d) => d.type),
    );
    assert.deepEqual(
      data.map((d) => d.sequence_number),
      data.map((_, i) => i),
    );
    assert.deepEqual([data[0]?.type, data.at(-1)?.type], ['response.created', 'response.completed']);
    assert.ok(data.some((d) => d.type === 'response.output_text.delta'));
  });
});

describe('anthropic stream framing', () => {
  let fake: anthropicFake.AnthropicFake;
  before(async () => {
    fake = await anthropicFake.start();
  });
  after(() => fake.close());

  it('sends the documented event order, a ping after the first block starts, type in every data line', async () => {
    fake.setOutput({ text: 'abcdef', chunks: 2 });
    const response = await postJson(
      `${fake.baseUrl}/v1/messages`,
      {
        model: 'claude-test',
        max_tokens: 16,
        stream: true,
        messages: [{ role: 'user', content: 'go' }],
        tools: [{ name: 'calc', input_schema: { type: 'object' } }],
      },
      { 'x-api-key': 'any', 'anthropic-version': '2023-06-01' },
    );
    const events = parseSse(await response.text());
    const data = events.map(
      (e) => JSON.parse(e.data) as { type: string; delta?: { type?: string; stop_reason?: string } },
    );
    assert.deepEqual(
      events.map((e) => e.event),
      data.map((d) => d.type),
    );
    assert.deepEqual(
      data.map((d) => (d.type === 'content_block_delta' ? d.delta?.type : d.type)),
      [
        'message_start',
        'content_block_start',
        'ping',
        'text_delta',
        'text_delta',
        'content_block_stop',
        'content_block_start',
        'input_json_delta',
        'input_json_delta',
        'input_json_delta',
        'content_block_stop',
        'message_delta',
        'message_stop',
      ],
    );
    assert.equal(data.at(-2)?.delta?.stop_reason, 'tool_use');
  });

  it('refuses the sampling parameters API version 2026-10-21 removed', async () => {
    const body = {
      model: 'claude-test',
      max_tokens: 16,
      temperature: 0.2,
      messages: [{ role: 'user', content: 'go' }],
    };
    const newer = await postJson(`${fake.baseUrl}/v1/messages`, body, {
      'x-api-key': 'any',
      'anthropic-version': '2026-10-21',
    });
    assert.equal(newer.status, 400);
    const older = await postJson(`${fake.baseUrl}/v1/messages`, body, {
      'x-api-key': 'any',
      'anthropic-version': '2023-06-01',
    });
    assert.equal(older.status, 200);
  });
});
