import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import OpenAI, { toFile } from 'openai';
import * as openaiFake from './openai.ts';
import { parseSse, postJson } from './sse-client.ts';

// The official openai client, pointed straight at the fake: if the SDK parses every answer (and its stream
// helpers accept every event sequence), the fake speaks the wire format the gateway must relay.

const KEY = 'fake-openai-key-0001';
const TOOLS = [
  { type: 'function' as const, function: { name: 'get_weather', parameters: { type: 'object', properties: {} } } },
  { type: 'function' as const, function: { name: 'get_time', parameters: { type: 'object', properties: {} } } },
];

describe('openai fake, driven by the openai SDK', () => {
  let fake: openaiFake.OpenAIFake;
  let client: OpenAI;

  before(async () => {
    fake = await openaiFake.start({ flavour: 'openai', apiKey: KEY });
    client = new OpenAI({ baseURL: fake.baseUrl, apiKey: KEY, maxRetries: 0 });
  });
  after(() => fake.close());

  it('chat: a plain completion with every usage detail', async () => {
    fake.setUsage({ inputTokens: 40, outputTokens: 12, cachedTokens: 6, reasoningTokens: 2 });
    const completion = await client.chat.completions.create({
      model: 'gpt-test',
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(completion.object, 'chat.completion');
    assert.equal(completion.choices[0]?.message.content, openaiFake.DEFAULT_OUTPUT.text);
    assert.equal(completion.choices[0]?.finish_reason, 'stop');
    assert.deepEqual(
      [completion.usage?.prompt_tokens, completion.usage?.completion_tokens, completion.usage?.total_tokens],
      [40, 12, 52],
    );
    assert.equal(completion.usage?.prompt_tokens_details?.cached_tokens, 6);
    assert.equal(completion.usage?.completion_tokens_details?.reasoning_tokens, 2);
    const recorded = fake.requests.at(-1);
    assert.deepEqual(recorded?.json, { model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal(recorded?.headers.authorization, `Bearer ${KEY}`);
  });

  it('chat: streamed text arrives in the configured number of chunks, usage last', async () => {
    fake.setOutput({ text: 'abcdefghij', chunks: 5 });
    const stream = await client.chat.completions.create({
      model: 'gpt-test',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      stream_options: { include_usage: true },
    });
    const pieces: string[] = [];
    let usageChunks = 0;
    for await (const chunk of stream) {
      const content = chunk.choices[0]?.delta.content;
      if (content) pieces.push(content);
      if (chunk.usage) usageChunks++;
    }
    assert.deepEqual(pieces, ['ab', 'cd', 'ef', 'gh', 'ij']);
    assert.equal(usageChunks, 1);
    fake.setOutput({ text: openaiFake.DEFAULT_OUTPUT.text, chunks: openaiFake.DEFAULT_OUTPUT.chunks });
  });

  it('chat: one tool call per offered tool, plain and through the stream helper', async () => {
    const plain = await client.chat.completions.create({
      model: 'gpt-test',
      messages: [{ role: 'user', content: 'go' }],
      tools: TOOLS,
    });
    assert.equal(plain.choices[0]?.finish_reason, 'tool_calls');
    const calls = plain.choices[0]?.message.tool_calls ?? [];
    assert.deepEqual(
      calls.map((c) => (c.type === 'function' ? [c.function.name, JSON.parse(c.function.arguments)] : null)),
      [
        ['get_weather', { query: 'fake input for get_weather', index: 0 }],
        ['get_time', { query: 'fake input for get_time', index: 1 }],
      ],
    );

    const runner = client.chat.completions.stream({
      model: 'gpt-test',
      messages: [{ role: 'user', content: 'go' }],
      tools: TOOLS,
    });
    const final = await runner.finalChatCompletion();
    const streamed = final.choices[0]?.message.tool_calls ?? [];
    assert.deepEqual(
      streamed.map((c) => (c.type === 'function' ? [c.function.name, c.function.arguments] : null)),
      calls.map((c) => (c.type === 'function' ? [c.function.name, c.function.arguments] : null)),
    );
    assert.equal(final.choices[0]?.finish_reason, 'tool_calls');
  });

  it('embeddings: the SDK default (base64) and explicit floats decode to the same vectors', async () => {
    const viaBase64 = await client.embeddings.create({ model: 'text-embedding-test', input: ['one', 'two'] });
    assert.equal((fake.requests.at(-1)?.json as { encoding_format?: string } | undefined)?.encoding_format, 'base64');
    const viaFloat = await client.embeddings.create({
      model: 'text-embedding-test',
      input: ['one', 'two'],
      encoding_format: 'float',
    });
    assert.deepEqual(
      viaBase64.data.map((d) => d.embedding),
      [openaiFake.embeddingFor('one', 8), openaiFake.embeddingFor('two', 8)],
    );
    assert.deepEqual(
      viaFloat.data.map((d) => d.embedding),
      viaBase64.data.map((d) => d.embedding),
    );
    assert.equal(viaBase64.usage.prompt_tokens, viaBase64.usage.total_tokens);
  });

  it('responses: create, retrieve, input items, delete; unknown ids are 404', async () => {
    fake.setUsage({ ...openaiFake.DEFAULT_USAGE });
    const created = await client.responses.create({
      model: 'gpt-test',
      input: 'hello there',
      tools: [{ type: 'function', name: 'lookup', parameters: null, strict: false }],
    });
    assert.match(created.id, /^resp_/);
    assert.equal(created.output_text, openaiFake.DEFAULT_OUTPUT.text);
    assert.deepEqual(
      created.output.map((o) => o.type),
      ['message', 'function_call'],
    );
    assert.equal(created.usage?.input_tokens_details.cached_tokens, openaiFake.DEFAULT_USAGE.cachedTokens);
    assert.equal(created.usage?.output_tokens_details.reasoning_tokens, openaiFake.DEFAULT_USAGE.reasoningTokens);

    const retrieved = await client.responses.retrieve(created.id);
    assert.equal(retrieved.id, created.id);
    const items = await client.responses.inputItems.list(created.id);
    assert.deepEqual(
      items.data.map((i) => (i.type === 'message' ? i.role : i.type)),
      ['user'],
    );
    await client.responses.delete(created.id);
    await assert.rejects(client.responses.retrieve(created.id), (err: unknown) => err instanceof OpenAI.NotFoundError);
  });

  it('responses: the stream helper accumulates the typed events into the final response', async () => {
    const stream = client.responses.stream({
      model: 'gpt-test',
      input: 'hi',
      tools: [{ type: 'function', name: 'lookup', parameters: null, strict: false }],
    });
    const deltas: string[] = [];
    stream.on('response.output_text.delta', (e) => deltas.push(e.delta));
    const final = await stream.finalResponse();
    assert.equal(deltas.join(''), openaiFake.DEFAULT_OUTPUT.text);
    assert.equal(final.status, 'completed');
    assert.deepEqual(
      final.output.map((o) => o.type),
      ['message', 'function_call'],
    );
    assert.equal(fake.storedResponses.get(final.id)?.status, 'completed');
  });

  it('responses: cancel, input token counts and compaction', async () => {
    const background = await client.responses.create({ model: 'gpt-test', input: 'long job', background: true });
    assert.equal(background.status, 'in_progress');
    const cancelled = await client.responses.cancel(background.id);
    assert.equal(cancelled.status, 'cancelled');
    const count = await client.responses.inputTokens.count({ model: 'gpt-test', input: 'count me' });
    assert.deepEqual(count, { object: 'response.input_tokens', input_tokens: openaiFake.DEFAULT_USAGE.inputTokens });
    const compacted = await client.responses.compact({
      model: 'gpt-test',
      input: [{ role: 'user', content: 'remember this' }],
    });
    assert.equal(compacted.object, 'response.compaction');
    assert.deepEqual(
      compacted.output.map((o) => o.type),
      ['message', 'compaction'],
    );
  });

  it('images: generate as JSON, edit as multipart recorded as part summaries', async () => {
    const generated = await client.images.generate({ model: 'gpt-image-1', prompt: 'a fox', n: 2 });
    assert.equal(generated.data?.length, 2);
    assert.ok(
      Buffer.from(generated.data?.[0]?.b64_json ?? '', 'base64')
        .subarray(1, 4)
        .equals(Buffer.from('PNG')),
    );
    assert.equal(
      generated.usage?.total_tokens,
      openaiFake.DEFAULT_USAGE.inputTokens + openaiFake.DEFAULT_USAGE.outputTokens,
    );

    const image = Buffer.from('not really a png, but bytes all the same');
    const edited = await client.images.edit({
      model: 'gpt-image-1',
      prompt: 'make it blue',
      image: await toFile(image, 'fox.png', { type: 'image/png' }),
    });
    assert.equal(edited.data?.length, 1);
    const parts = fake.requests.at(-1)?.parts ?? [];
    const file = parts.find((p) => p.name === 'image');
    assert.deepEqual(
      { filename: file?.filename, size: file?.size, sha256: file?.sha256 },
      { filename: 'fox.png', size: image.length, sha256: createHash('sha256').update(image).digest('hex') },
    );
    assert.equal(parts.find((p) => p.name === 'prompt')?.value, 'make it blue');
    assert.equal(fake.requests.at(-1)?.body, '');
  });

  it('speech: deterministic bytes of the configured size, byte for byte', async () => {
    fake.setOutput({ speechBytes: 10_001 });
    const response = await client.audio.speech.create({ model: 'gpt-4o-mini-tts', voice: 'alloy', input: 'say this' });
    assert.equal(response.headers.get('content-type'), 'audio/mpeg');
    const bytes = Buffer.from(await response.arrayBuffer());
    assert.ok(bytes.equals(openaiFake.speechBytes('say this', 10_001)));
    assert.equal(openaiFake.speechBytes('say that', 10_001).equals(bytes), false);
  });

  it('transcription: usage for token-billed models, none for whisper; the upload is hashed', async () => {
    const audio = openaiFake.pseudoRandomBytes('audio', 300_000);
    const file = await toFile(audio, 'talk.mp3', { type: 'audio/mpeg' });
    const tokens = await client.audio.transcriptions.create({ model: 'gpt-4o-transcribe', file, language: 'en' });
    assert.equal(tokens.text, openaiFake.DEFAULT_OUTPUT.transcript);
    assert.equal(tokens.usage?.type, 'tokens');
    const parts = fake.requests.at(-1)?.parts ?? [];
    assert.deepEqual(
      parts.map((p) => [p.name, p.size, p.sha256 ?? p.value]),
      [
        ['model', 17, 'gpt-4o-transcribe'],
        ['file', audio.length, createHash('sha256').update(audio).digest('hex')],
        ['language', 2, 'en'],
      ],
    );
    const whisper = await client.audio.transcriptions.create({
      model: 'whisper-1',
      file: await toFile(audio, 'talk.mp3'),
    });
    assert.deepEqual(whisper, { text: openaiFake.DEFAULT_OUTPUT.transcript });
  });

  it('errors: failNext answers with the given status and body, which the SDK raises', async () => {
    fake.failNext(429, {
      error: { message: 'Rate limit reached', type: 'requests', param: null, code: 'rate_limit_exceeded' },
    });
    await assert.rejects(
      client.chat.completions.create({ model: 'gpt-test', messages: [{ role: 'user', content: 'hi' }] }),
      (err: unknown) => err instanceof OpenAI.RateLimitError && err.code === 'rate_limit_exceeded',
    );
  });
});

describe('openai fake, raw HTTP', () => {
  let fake: openaiFake.OpenAIFake;
  const chat = (body: Record<string, unknown>): Promise<Response> =>
    postJson(`${fake.baseUrl}/chat/completions`, {
      model: 'gpt-test',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
      ...body,
    });

  before(async () => {
    fake = await openaiFake.start();
    fake.setOutput({ text: 'one two three', chunks: 3 });
  });
  after(() => fake.close());

  it('include_usage: usage null on every chunk, then one usage chunk with no choices, then [DONE]', async () => {
    const response = await chat({ stream_options: { include_usage: true } });
    assert.equal(response.headers.get('content-type'), 'text/event-stream; charset=utf-8');
    const events = parseSse(await response.text());
    assert.equal(events.at(-1)?.data, '[DONE]');
    const chunks = events
      .slice(0, -1)
      .map((e) => JSON.parse(e.data) as { object: string; choices: unknown[]; usage: unknown });
    // role, three text pieces, finish, usage
    assert.equal(chunks.length, 6);
    assert.ok(chunks.every((c) => c.object === 'chat.completion.chunk'));
    assert.deepEqual(
      chunks.slice(0, -1).map((c) => c.usage),
      [null, null, null, null, null],
    );
    assert.deepEqual(chunks.at(-1)?.choices, []);
    assert.equal(
      (chunks.at(-1)!.usage as { total_tokens: number }).total_tokens,
      openaiFake.DEFAULT_USAGE.inputTokens + openaiFake.DEFAULT_USAGE.outputTokens,
    );
  });

  it('without include_usage: no usage key anywhere in the stream', async () => {
    const text = await (await chat({})).text();
    assert.equal(text.includes('usage'), false);
    const events = parseSse(text);
    assert.equal(events.length, 6);
    assert.equal(events.at(-1)?.data, '[DONE]');
  });

  it('failMidStreamNext: the chunks before the cut arrive, then the connection breaks', async () => {
    fake.failMidStreamNext({ afterChunks: 2 });
    const response = await chat({});
    assert.equal(response.status, 200);
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    const decoder = new TextDecoder();
    let received = '';
    const failure = await (async () => {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return null;
        received += decoder.decode(value, { stream: true });
      }
    })().catch((err: unknown) => err);
    assert.ok(failure instanceof Error, 'the body ends in an error, not a clean end');
    assert.equal(parseSse(received).length, 2);
    assert.deepEqual(await fake.lastStreamEnded().then((end) => [end.by, end.eventsSent]), ['destroyed', 2]);
    // The next stream is whole again.
    assert.equal(parseSse(await (await chat({})).text()).at(-1)?.data, '[DONE]');
  });
});
