import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { after, before, describe, test } from 'node:test';
import OpenAI, { toFile } from 'openai';
import * as openaiFake from '../fakes/openai.ts';
import {
  addProvider,
  ANSWER_SENTINEL,
  assertContentNeverLogged,
  assertTokenNeverUpstream,
  assertUsage,
  distinctUsage,
  embeddingsUsage,
  NOTHING_REPORTED,
  PROMPT_SENTINEL,
  requestIds,
  styleAUsage,
} from '../helpers/gateway.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// The gateway against an `openai` provider, driven by the official openai client: every styleA route,
// plain and streamed, with the usage each call meters. A second openai provider shows that calls by
// response ID reach the provider that created the response.

const KEY_A = `fake-openai-key-a-${process.pid}`;
const KEY_B = `fake-openai-key-b-${process.pid}`;
const TEXT = `Relayed ${ANSWER_SENTINEL} intact.`;
const TOOLS: OpenAI.Chat.ChatCompletionTool[] = [
  {
    type: 'function',
    function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } },
  },
  {
    type: 'function',
    function: { name: 'get_time', parameters: { type: 'object', properties: { tz: { type: 'string' } } } },
  },
];
// Two calls of one tool and one of the other: the meter must count per name.
const CALLS = [
  { name: 'get_weather', arguments: { city: 'Oslo', nested: { days: [1, 2], note: 'a "quoted" \\ value' } } },
  { name: 'get_weather', arguments: { city: 'Bergen' } },
  { name: 'get_time', arguments: { tz: 'Europe/Oslo' } },
];
const ask = (text: string): OpenAI.Chat.ChatCompletionMessageParam[] => [
  { role: 'user', content: `${text} ${PROMPT_SENTINEL}` },
];

let svc: InProcessService;
let a: openaiFake.OpenAIFake;
let b: openaiFake.OpenAIFake;
let client: OpenAI;
const ids = requestIds();

before(async () => {
  a = await openaiFake.start({ apiKey: KEY_A });
  b = await openaiFake.start({ apiKey: KEY_B });
  a.setModels(
    ['gpt-test', 'text-embedding-3-small', 'gpt-image-1', 'gpt-4o-mini-tts', 'gpt-4o-transcribe'].map((id) => ({ id })),
  );
  b.setModels([{ id: 'gpt-test' }]);
  for (const fake of [a, b]) fake.setOutput({ text: TEXT, chunks: 7, transcript: `Heard ${ANSWER_SENTINEL}.` });
  svc = await startInProcess();
  assert.equal(await addProvider(svc, { kind: 'openai', baseUrl: a.baseUrl, credential: KEY_A }), 5);
  assert.equal(await addProvider(svc, { id: 'openai-b', kind: 'openai', baseUrl: b.baseUrl, credential: KEY_B }), 1);
  client = new OpenAI({ baseURL: `${svc.url}/v1`, apiKey: svc.adminToken, maxRetries: 0, fetch: ids.fetch });
});
after(async () => {
  await svc?.stop();
  await a?.close();
  await b?.close();
});

const lastJson = (fake: openaiFake.OpenAIFake) => fake.requests.at(-1)!.json as Record<string, any>;

/** One streamed chat call through the SDK, read to its end: its chunks and request ID. */
function streamChat(text: string, extra: Partial<OpenAI.Chat.ChatCompletionCreateParamsStreaming> = {}) {
  return ids.call(async () => {
    const stream = await client.chat.completions.create({
      model: 'openai/gpt-test',
      messages: ask(text),
      stream: true,
      ...extra,
    });
    const seen: OpenAI.Chat.ChatCompletionChunk[] = [];
    for await (const chunk of stream) seen.push(chunk);
    return seen;
  });
}

describe('chat completions', () => {
  const chat = { op: 'chat.completions', providerId: 'openai', modelId: 'openai/gpt-test' };

  test('plain: the answer and usage as the fake gave them, the model rewritten upstream', async () => {
    const usage = distinctUsage(1);
    a.setUsage(usage);
    const { result, reqId } = await ids.call(() =>
      client.chat.completions.create({ model: 'openai/gpt-test', messages: ask('hello') }),
    );
    assert.equal(result.choices[0]?.message.content, TEXT);
    assert.deepEqual(
      [result.usage?.prompt_tokens, result.usage?.prompt_tokens_details?.cached_tokens],
      [usage.inputTokens, usage.cachedTokens],
    );
    assert.deepEqual(lastJson(a), { model: 'gpt-test', messages: ask('hello') });
    assert.equal(a.requests.at(-1)!.headers.authorization, `Bearer ${KEY_A}`);
    // costUsd stays null: only OpenRouter's `cost` has a documented unit.
    await assertUsage(svc, reqId, { ...chat, usage: styleAUsage(usage) });
  });

  test('streamed without include_usage: no chunk carries usage, yet the call is metered', async () => {
    const usage = distinctUsage(2);
    a.setUsage(usage);
    const { result: chunks, reqId } = await streamChat('stream');
    assert.equal(chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), TEXT);
    assert.equal(chunks.at(-1)?.choices[0]?.finish_reason, 'stop');
    assert.deepEqual(
      chunks.filter((c) => 'usage' in c),
      [],
      'no usage member, not even null',
    );
    assert.ok(
      chunks.every((c) => c.choices.length === 1),
      'the usage-only chunk is removed',
    );
    // The worker asked the upstream for usage on the client's behalf.
    assert.deepEqual(lastJson(a).stream_options, { include_usage: true });
    await assertUsage(svc, reqId, { ...chat, usage: styleAUsage(usage) });
  });

  test('a client that closes the stream at [DONE], before the upstream ends it, is served, not aborted', async () => {
    const usage = distinctUsage(11);
    a.setUsage(usage);
    // The SDK stops reading at [DONE] and cancels the body; the fake ends its response only later.
    a.lingerNext({ endDelayMs: 400 });
    const ended = a.nextStream().then((s) => s.ended);
    const { result: chunks, reqId } = await streamChat('linger');
    assert.equal(chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), TEXT);
    await assertUsage(svc, reqId, { ...chat, usage: styleAUsage(usage) });
    // The relay stopped the upstream call when the client left: it did not wait for the late end.
    assert.equal((await ended).by, 'client-closed');
  });

  test('streamed with include_usage: usage null on every chunk, then one usage chunk', async () => {
    const usage = distinctUsage(3);
    a.setUsage(usage);
    const { result: chunks, reqId } = await streamChat('usage', { stream_options: { include_usage: true } });
    assert.ok(chunks.length > 2);
    assert.deepEqual(
      chunks.slice(0, -1).map((c) => c.usage),
      Array(chunks.length - 1).fill(null),
    );
    const last = chunks.at(-1)!;
    assert.deepEqual(last.choices, []);
    assert.deepEqual(
      [last.usage?.prompt_tokens, last.usage?.completion_tokens, last.usage?.total_tokens],
      [usage.inputTokens, usage.outputTokens, usage.inputTokens + usage.outputTokens],
    );
    assert.equal(chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), TEXT);
    await assertUsage(svc, reqId, { ...chat, usage: styleAUsage(usage) });
  });

  test(
    'tools, plain and streamed through the SDK helper: names and arguments intact, calls counted per ' + 'name',
    async () => {
      a.setOutput({ toolCalls: CALLS, argumentChunks: 4 });
      try {
        const plainUsage = distinctUsage(4);
        a.setUsage(plainUsage);
        const plain = await ids.call(() =>
          client.chat.completions.create({ model: 'openai/gpt-test', messages: ask('weather'), tools: TOOLS }),
        );
        assert.deepEqual(callsOf(plain.result), CALLS);
        assert.deepEqual(lastJson(a).tools, TOOLS);
        await assertUsage(svc, plain.reqId, {
          ...chat,
          usage: styleAUsage(plainUsage, { toolCalls: { get_weather: 2, get_time: 1 } }),
        });

        const streamedUsage = distinctUsage(5);
        a.setUsage(streamedUsage);
        const streamed = await ids.call(() =>
          client.chat.completions
            .stream({ model: 'openai/gpt-test', messages: ask('weather, streamed'), tools: TOOLS })
            .finalChatCompletion(),
        );
        assert.deepEqual(callsOf(streamed.result), CALLS);
        assert.equal(streamed.result.choices[0]?.finish_reason, 'tool_calls');
        assert.equal(lastJson(a).stream, true);
        await assertUsage(svc, streamed.reqId, {
          ...chat,
          usage: styleAUsage(streamedUsage, { toolCalls: { get_weather: 2, get_time: 1 } }),
        });
      } finally {
        a.setOutput({ toolCalls: 'auto', argumentChunks: openaiFake.DEFAULT_OUTPUT.argumentChunks });
      }
    },
  );
});

function callsOf(completion: OpenAI.Chat.ChatCompletion) {
  return (completion.choices[0]?.message.tool_calls ?? []).map((c) =>
    c.type === 'function' ? { name: c.function.name, arguments: JSON.parse(c.function.arguments) as unknown } : c,
  );
}

test("embeddings: the SDK default base64 path decodes to the fake's vectors", async () => {
  const usage = distinctUsage(6);
  a.setUsage(usage);
  const inputs = ['first text', `second ${PROMPT_SENTINEL}`];
  const { result, reqId } = await ids.call(() =>
    client.embeddings.create({ model: 'openai/text-embedding-3-small', input: inputs }),
  );
  assert.deepEqual(lastJson(a), { model: 'text-embedding-3-small', input: inputs, encoding_format: 'base64' });
  assert.deepEqual(
    result.data.map((d) => d.embedding),
    inputs.map((text) => openaiFake.embeddingFor(text, openaiFake.DEFAULT_OUTPUT.embeddingDimensions)),
  );
  assert.deepEqual([result.usage.prompt_tokens, result.usage.total_tokens], [usage.inputTokens, usage.inputTokens]);
  await assertUsage(svc, reqId, {
    op: 'embeddings',
    providerId: 'openai',
    modelId: 'openai/text-embedding-3-small',
    usage: embeddingsUsage(usage),
  });
});

describe('responses', () => {
  const LOOKUP: OpenAI.Responses.FunctionTool = {
    type: 'function',
    name: 'lookup',
    parameters: { type: 'object', properties: {} },
    strict: false,
  };
  const byId = (op: string, providerId = 'openai') => ({ op, providerId, modelId: null, usage: NOTHING_REPORTED });

  test('create, retrieve, input items, delete: each reaches the provider that holds the response', async () => {
    const usage = distinctUsage(7);
    a.setUsage(usage);
    const made = await ids.call(() =>
      client.responses.create({ model: 'openai/gpt-test', input: `look it up ${PROMPT_SENTINEL}`, tools: [LOOKUP] }),
    );
    const id = made.result.id;
    assert.equal(made.result.output_text, TEXT);
    assert.deepEqual(
      made.result.output.map((o) => o.type),
      ['message', 'function_call'],
    );
    assert.equal(lastJson(a).model, 'gpt-test');
    await assertUsage(svc, made.reqId, {
      op: 'responses.create',
      providerId: 'openai',
      modelId: 'openai/gpt-test',
      usage: styleAUsage(usage, { toolCalls: { lookup: 1 } }),
    });

    const got = await ids.call(() => client.responses.retrieve(id));
    assert.deepEqual([got.result.id, got.result.output_text, got.result.status], [id, TEXT, 'completed']);
    assert.deepEqual([a.requests.at(-1)!.method, a.requests.at(-1)!.path], ['GET', `/v1/responses/${id}`]);
    await assertUsage(svc, got.reqId, byId('responses.get'));

    const items = await ids.call(() => client.responses.inputItems.list(id));
    assert.deepEqual(
      items.result.data.map((i) =>
        i.type === 'message' ? [i.role, i.content.map((c) => (c.type === 'input_text' ? c.text : c.type))] : i.type,
      ),
      [['user', [`look it up ${PROMPT_SENTINEL}`]]],
    );
    await assertUsage(svc, items.reqId, byId('responses.input_items'));

    const deleted = await ids.call(() => client.responses.delete(id).asResponse());
    assert.deepEqual(await deleted.result.json(), { id, object: 'response.deleted', deleted: true });
    assert.equal(a.storedResponses.has(id), false);
    await assertUsage(svc, deleted.reqId, byId('responses.delete'));

    // The upstream's 404 keeps its status, so the SDK raises its own NotFoundError; the call is logged as failed.
    const gone = await client.responses.retrieve(id).catch((err: unknown) => err);
    assert.ok(gone instanceof OpenAI.NotFoundError && gone.code === 'UPSTREAM_ERROR', String(gone));
    await assertUsage(svc, gone.headers?.get('x-service-request-id') ?? '', {
      ...byId('responses.get'),
      outcome: 'failed',
      usage: null,
    });
  });

  test('the stream helper works end to end; the streamed response is retrievable afterwards', async () => {
    const usage = distinctUsage(8);
    a.setUsage(usage);
    const deltas: string[] = [];
    const { result: final, reqId } = await ids.call(() => {
      const stream = client.responses.stream({
        model: 'openai/gpt-test',
        input: `stream it ${PROMPT_SENTINEL}`,
        tools: [LOOKUP],
      });
      stream.on('response.output_text.delta', (e) => deltas.push(e.delta));
      return stream.finalResponse();
    });
    assert.equal(deltas.join(''), TEXT);
    assert.ok(deltas.length > 1);
    assert.equal(final.status, 'completed');
    assert.deepEqual(
      final.output.map((o) => o.type),
      ['message', 'function_call'],
    );
    assert.equal(lastJson(a).stream, true);
    await assertUsage(svc, reqId, {
      op: 'responses.create',
      providerId: 'openai',
      modelId: 'openai/gpt-test',
      usage: styleAUsage(usage, { toolCalls: { lookup: 1 } }),
    });

    const got = await client.responses.retrieve(final.id);
    assert.deepEqual([got.id, got.output_text], [final.id, TEXT]);
    assert.deepEqual([a.requests.at(-1)!.method, a.requests.at(-1)!.path], ['GET', `/v1/responses/${final.id}`]);
  });

  test('a response created through the second provider is retrieved and listed there, never at the first', async () => {
    const before = a.requests.length;
    const made = await client.responses.create({ model: 'openai-b/gpt-test', input: `elsewhere ${PROMPT_SENTINEL}` });
    assert.ok(b.storedResponses.has(made.id));
    const got = await ids.call(() => client.responses.retrieve(made.id));
    assert.equal(got.result.id, made.id);
    const items = await client.responses.inputItems.list(made.id);
    assert.equal(items.data.length, 1);
    assert.deepEqual(
      b.requests.slice(-2).map((r) => `${r.method} ${r.path}`),
      [`GET /v1/responses/${made.id}`, `GET /v1/responses/${made.id}/input_items`],
    );
    assert.equal(b.requests.at(-1)!.headers.authorization, `Bearer ${KEY_B}`);
    assert.equal(a.requests.length, before, 'the first provider saw none of it');
    await assertUsage(svc, got.reqId, byId('responses.get', 'openai-b'));

    const unknown = await svc.request('GET', '/v1/responses/resp_never_seen_here');
    assert.deepEqual([unknown.status, unknown.json.error.code, unknown.json.error.param], [404, 'NOT_FOUND', 'id']);
  });

  // Regression: the response ID -> provider route was remembered only when a streamed create ended cleanly,
  // so an interrupted background response (OpenAI documents resuming it by ID) was 404 for every call by ID.
  test('a streamed background response is reachable by ID after the client dropped the stream', async () => {
    // The fake holds every event after the first, so the client drops the stream before it can end.
    a.slowStreamNext({ chunkDelayMs: 2000 });
    const stream = await client.responses.create({
      model: 'openai/gpt-test',
      input: `resumable ${PROMPT_SENTINEL}`,
      background: true,
      stream: true,
    });
    let id = '';
    for await (const event of stream) {
      if (event.type === 'response.created') id = event.response.id;
      break;
    }
    assert.equal((await a.lastStreamEnded()).by, 'client-closed');
    assert.ok(a.storedResponses.has(id), 'the provider holds the response');
    const got = await client.responses.retrieve(id);
    assert.equal(got.id, id);
  });

  test('cancel a background response', async () => {
    const made = await ids.call(() =>
      client.responses.create({ model: 'openai/gpt-test', input: `long job ${PROMPT_SENTINEL}`, background: true }),
    );
    assert.equal(made.result.status, 'in_progress');
    // A background response reports no usage yet: the line says so rather than inventing numbers.
    await assertUsage(svc, made.reqId, {
      op: 'responses.create',
      providerId: 'openai',
      modelId: 'openai/gpt-test',
      usage: NOTHING_REPORTED,
    });
    const cancelled = await ids.call(() => client.responses.cancel(made.result.id));
    assert.deepEqual([cancelled.result.id, cancelled.result.status], [made.result.id, 'cancelled']);
    assert.deepEqual(
      [a.requests.at(-1)!.method, a.requests.at(-1)!.path],
      ['POST', `/v1/responses/${made.result.id}/cancel`],
    );
    assert.equal(a.storedResponses.get(made.result.id)?.status, 'cancelled');
    await assertUsage(svc, cancelled.reqId, byId('responses.cancel'));
  });
});

describe('images', () => {
  const PNG_SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47]);
  const IMAGE = openaiFake.pseudoRandomBytes('image to edit', 300_001);
  const sha256 = (data: Buffer) => createHash('sha256').update(data).digest('hex');

  test('generate: images and usage as the fake gave them', async () => {
    const usage = distinctUsage(9);
    a.setUsage(usage);
    const { result, reqId } = await ids.call(() =>
      client.images.generate({ model: 'openai/gpt-image-1', prompt: `a fox ${PROMPT_SENTINEL}`, n: 2 }),
    );
    assert.equal(result.data?.length, 2);
    for (const image of result.data ?? [])
      assert.ok(
        Buffer.from(image.b64_json ?? '', 'base64')
          .subarray(0, 4)
          .equals(PNG_SIGNATURE),
      );
    assert.equal(lastJson(a).model, 'gpt-image-1');
    await assertUsage(svc, reqId, {
      op: 'images.generations',
      providerId: 'openai',
      modelId: 'openai/gpt-image-1',
      usage: styleAUsage(usage, { details: false }),
    });
  });

  test('edit (multipart, file first): the fake saw the same file bytes and the upstream model ID', async () => {
    const image = await toFile(IMAGE, 'fox.png', { type: 'image/png' });
    const { result, reqId } = await ids.call(() =>
      client.images.edit({ image, model: 'openai/gpt-image-1', prompt: `make it blue ${PROMPT_SENTINEL}` }),
    );
    assert.equal(result.data?.length, 1);
    const parts = a.requests.at(-1)!.parts ?? [];
    assert.deepEqual(
      parts.map((p) => p.name),
      ['image', 'model', 'prompt'],
    );
    assert.deepEqual(
      { filename: parts[0]?.filename, size: parts[0]?.size, sha256: parts[0]?.sha256 },
      { filename: 'fox.png', size: IMAGE.length, sha256: sha256(IMAGE) },
    );
    assert.deepEqual([parts[1]?.value, parts[2]?.value], ['gpt-image-1', `make it blue ${PROMPT_SENTINEL}`]);
    // gpt-image models answer base64 images; any other model name would get DALL-E's URLs.
    assert.ok(result.data?.[0]?.b64_json);
    await assertUsage(svc, reqId, {
      op: 'images.edits',
      providerId: 'openai',
      modelId: 'openai/gpt-image-1',
      usage: NOTHING_REPORTED,
    });
  });
});

describe('audio', () => {
  test("speech: the bytes are the fake's, byte for byte", async () => {
    const size = 300_007;
    a.setOutput({ speechBytes: size });
    const input = `say this ${PROMPT_SENTINEL}`;
    const { result: response, reqId } = await ids.call(() =>
      client.audio.speech.create({ model: 'openai/gpt-4o-mini-tts', voice: 'alloy', input }),
    );
    assert.equal(response.headers.get('content-type'), 'audio/mpeg');
    const bytes = Buffer.from(await response.arrayBuffer());
    assert.equal(bytes.length, size);
    assert.ok(bytes.equals(openaiFake.speechBytes(input, size)));
    assert.deepEqual(lastJson(a), { model: 'gpt-4o-mini-tts', voice: 'alloy', input });
    await assertUsage(svc, reqId, {
      op: 'audio.speech',
      providerId: 'openai',
      modelId: 'openai/gpt-4o-mini-tts',
      usage: NOTHING_REPORTED,
    });
  });

  test('transcription: multipart with the file first (over the in-memory prefix), relayed intact', async () => {
    // Over the 4 MiB the edge keeps in memory before the model field: the prefix spills to a file.
    const audio = openaiFake.pseudoRandomBytes('audio upload', 5 * 1024 * 1024 + 3);
    const file = await toFile(audio, 'talk.mp3', { type: 'audio/mpeg' });
    const { result, reqId } = await ids.call(() =>
      client.audio.transcriptions.create({
        file,
        model: 'openai/gpt-4o-transcribe',
        language: 'en',
        prompt: PROMPT_SENTINEL,
      }),
    );
    assert.equal(result.text, `Heard ${ANSWER_SENTINEL}.`);
    const parts = a.requests.at(-1)!.parts ?? [];
    assert.deepEqual(
      parts.map((p) => p.name),
      ['file', 'model', 'language', 'prompt'],
    );
    assert.deepEqual(
      [parts[0]?.size, parts[0]?.sha256],
      [audio.length, createHash('sha256').update(audio).digest('hex')],
    );
    assert.deepEqual([parts[1]?.value, parts[2]?.value, parts[3]?.value], ['gpt-4o-transcribe', 'en', PROMPT_SENTINEL]);
    await assertUsage(svc, reqId, {
      op: 'audio.transcriptions',
      providerId: 'openai',
      modelId: 'openai/gpt-4o-transcribe',
      usage: NOTHING_REPORTED,
    });
  });
});

describe('what never leaves or gets logged', () => {
  test('no upstream request carried the local token', () => {
    assertTokenNeverUpstream(svc.adminToken, [...a.requests, ...b.requests]);
  });

  test('prompts and answers never reach the log', () => {
    assertContentNeverLogged(svc, [...a.requests, ...b.requests]);
  });
});
