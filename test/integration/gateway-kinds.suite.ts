import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Anthropic from '@anthropic-ai/sdk';
import OpenAI from 'openai';
import type { UsageReport } from '../../protocol/gateway.ts';
import * as ollamaFake from '../fakes/ollama.ts';
import * as openaiFake from '../fakes/openai.ts';
import type { FakeUsage } from '../fakes/script.ts';
import { postJson } from '../fakes/sse-client.ts';
import {
  addProvider,
  ANSWER_SENTINEL,
  assertContentNeverLogged,
  assertTokenNeverUpstream,
  assertUsage,
  distinctUsage,
  embeddingsUsage,
  messagesUsage,
  NOTHING_REPORTED,
  PROMPT_SENTINEL,
  requestIds,
  styleAUsage,
} from '../helpers/gateway.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// The gateway against the other provider kinds, each through the fake of the server it stands for:
// openrouter, openai_compatible (vLLM), ollama and llamacpp (llama-server), with the official openai and
// Anthropic clients and, for rerank, raw HTTP. Every metered call's usage line must equal what the fake
// reported, streamed and not.

const KEYS = {
  openrouter: `or-key-${process.pid}`,
  compatible: `vllm-key-${process.pid}`,
  ollama: `ollama-key-${process.pid}`,
  llamacpp: `llama-key-${process.pid}`,
};
const TEXT = `Relayed ${ANSWER_SENTINEL} intact.`;
const TOOLS: Anthropic.Tool[] = [
  { name: 'get_weather', input_schema: { type: 'object', properties: { city: { type: 'string' } } } },
];
const DOCUMENTS = [
  'A fox jumps over the dog.',
  `Nothing about it ${PROMPT_SENTINEL}.`,
  'The quick fox.',
  'Dogs sleep.',
];

let svc: InProcessService;
let openrouter: openaiFake.OpenAIFake;
let compatible: openaiFake.OpenAIFake;
let llamacpp: openaiFake.OpenAIFake;
let ollama: ollamaFake.OllamaFake;
let openai: OpenAI;
let anthropic: Anthropic;
const ids = requestIds();
let seed = 0;

type AnyFake = openaiFake.OpenAIFake | ollamaFake.OllamaFake;
const lastJson = (fake: AnyFake) => fake.requests.at(-1)!.json as Record<string, any>;
const ask = (text: string) => [{ role: 'user' as const, content: `${text} ${PROMPT_SENTINEL}` }];
const nextUsage = (fake: AnyFake): FakeUsage => {
  const usage = distinctUsage(++seed);
  fake.setUsage(usage);
  return usage;
};

before(async () => {
  openrouter = await openaiFake.start({ flavour: 'openrouter', apiKey: KEYS.openrouter });
  openrouter.setModels([
    { id: 'meta/llama-test' },
    { id: 'openai/text-embedding-3-small', outputModalities: ['embeddings'] },
  ]);
  compatible = await openaiFake.start({ flavour: 'compatible', apiKey: KEYS.compatible });
  compatible.setModels([{ id: 'qwen-chat' }, { id: 'bge-embed-small' }, { id: 'bge-reranker-base' }]);
  llamacpp = await openaiFake.start({ flavour: 'llamacpp', apiKey: KEYS.llamacpp });
  llamacpp.setModels([{ id: 'qwen-local' }, { id: 'bge-reranker-v2' }]);
  ollama = await ollamaFake.start({ apiKey: KEYS.ollama });
  ollama.setModels([{ name: 'llama3.2:latest' }, { name: 'nomic-embed-text:latest', family: 'nomic-bert' }]);
  for (const fake of [openrouter, compatible, llamacpp, ollama]) fake.setOutput({ text: TEXT, chunks: 5 });

  svc = await startInProcess();
  assert.equal(
    await addProvider(svc, { kind: 'openrouter', baseUrl: openrouter.baseUrl, credential: KEYS.openrouter }),
    2,
  );
  assert.equal(
    await addProvider(svc, { kind: 'openai_compatible', baseUrl: compatible.baseUrl, credential: KEYS.compatible }),
    3,
  );
  assert.equal(await addProvider(svc, { kind: 'llamacpp', baseUrl: llamacpp.baseUrl, credential: KEYS.llamacpp }), 2);
  assert.equal(await addProvider(svc, { kind: 'ollama', baseUrl: ollama.baseUrl, credential: KEYS.ollama }), 2);
  // Requested by alias, the reranker is answered under that name (the contract: the model as requested).
  const aliased = await svc.request('PATCH', '/v1/catalog/models/openai-compatible%2Fbge-reranker-base', {
    body: { aliases: ['house-reranker'] },
  });
  assert.equal(aliased.status, 200, aliased.text);
  openai = new OpenAI({ baseURL: `${svc.url}/v1`, apiKey: svc.adminToken, maxRetries: 0, fetch: ids.fetch });
  anthropic = new Anthropic({ baseURL: svc.url, apiKey: svc.adminToken, maxRetries: 0, fetch: ids.fetch });
});
after(async () => {
  await svc?.stop();
  for (const fake of [openrouter, compatible, llamacpp, ollama]) await fake?.close();
});

interface ChatCase {
  fake: () => AnyFake;
  providerId: string;
  model: string;
  upstream: string;
  expect: (u: FakeUsage) => UsageReport;
  /** Whether the worker asks the upstream for stream usage (every kind but OpenRouter, which always sends it). */
  injects: boolean;
}

/** Chat plain, then streamed without include_usage, through the openai client. */
function chatTest({ fake, providerId, model, upstream, expect, injects }: ChatCase): void {
  test('chat, plain and streamed: the answer intact, usage as the fake reported it', async () => {
    const line = { op: 'chat.completions', providerId, modelId: model };
    const plainUsage = nextUsage(fake());
    const plain = await ids.call(() => openai.chat.completions.create({ model, messages: ask('plain') }));
    assert.equal(plain.result.choices[0]?.message.content, TEXT);
    assert.deepEqual(lastJson(fake()), { model: upstream, messages: ask('plain') });
    await assertUsage(svc, plain.reqId, { ...line, usage: expect(plainUsage) });

    const streamedUsage = nextUsage(fake());
    const streamed = await ids.call(async () => {
      const stream = await openai.chat.completions.create({ model, messages: ask('streamed'), stream: true });
      const chunks: OpenAI.Chat.ChatCompletionChunk[] = [];
      for await (const chunk of stream) chunks.push(chunk);
      return chunks;
    });
    const chunks = streamed.result;
    assert.equal(chunks.map((c) => c.choices[0]?.delta.content ?? '').join(''), TEXT);
    if (injects) {
      assert.deepEqual(lastJson(fake()).stream_options, { include_usage: true });
      assert.deepEqual(
        chunks.filter((c) => 'usage' in c),
        [],
        'what the worker asked for is removed',
      );
    } else {
      assert.equal(lastJson(fake()).stream_options, undefined, 'nothing injected');
      assert.equal(
        chunks.at(-1)?.usage?.total_tokens,
        streamedUsage.inputTokens + streamedUsage.outputTokens,
        'the upstream’s own usage chunk is relayed',
      );
    }
    await assertUsage(svc, streamed.reqId, { ...line, usage: expect(streamedUsage) });
  });
}

function embeddingsTest(fake: () => AnyFake, providerId: string, model: string, upstream: string): void {
  test('embeddings: base64 through the SDK, the fake’s vectors, usage as reported', async () => {
    const usage = nextUsage(fake());
    const inputs = ['one', `two ${PROMPT_SENTINEL}`];
    const { result, reqId } = await ids.call(() => openai.embeddings.create({ model, input: inputs }));
    assert.deepEqual(lastJson(fake()), { model: upstream, input: inputs, encoding_format: 'base64' });
    assert.deepEqual(
      result.data.map((d) => d.embedding),
      inputs.map((t) => openaiFake.embeddingFor(t, openaiFake.DEFAULT_OUTPUT.embeddingDimensions)),
    );
    await assertUsage(svc, reqId, { op: 'embeddings', providerId, modelId: model, usage: embeddingsUsage(usage) });
  });
}

/** POST /v1/rerank by raw HTTP; the answer is the fake's own ranking, in the contract's shape. */
function rerankTest(
  fake: () => openaiFake.OpenAIFake,
  key: string,
  providerId: string,
  modelId: string,
  requested: string,
  upstream: string,
): void {
  test('rerank: {object, model: as requested, results} best first, whatever the server answered', async () => {
    const body = { model: requested, query: 'quick fox jumps', documents: DOCUMENTS, top_n: 3 };
    const reply = await svc.request('POST', '/v1/rerank', { body });
    assert.equal(reply.status, 200, reply.text);
    const seen = fake().requests.find(
      (r) => r.headers['x-service-request-id'] === reply.headers['x-service-request-id'],
    );
    assert.deepEqual(seen?.json, { ...body, model: upstream }, 'top_n passed on, model rewritten');
    assert.equal(seen?.headers.authorization, `Bearer ${key}`);

    // The same question straight to the fake: its ranking and usage, which the service must keep.
    const direct = (await (
      await postJson(
        `${fake().baseUrl.replace(/\/v1$/, '')}/v1/rerank`,
        { ...body, model: upstream },
        { authorization: `Bearer ${key}` },
      )
    ).json()) as {
      results: { index: number; relevance_score: number }[];
      usage: unknown;
    };
    const results = direct.results.map(({ index, relevance_score }) => ({ index, relevance_score }));
    assert.deepEqual(reply.json, { object: 'list', model: requested, results, usage: direct.usage });
    assert.equal(results.length, 3);
    const scores = results.map((r) => r.relevance_score);
    assert.deepEqual(
      scores,
      [...scores].sort((x, y) => y - x),
    );
    await assertUsage(svc, reply.headers['x-service-request-id']!, {
      op: 'rerank',
      providerId,
      modelId,
      usage: NOTHING_REPORTED,
    });
  });
}

/** Messages plain, then streamed with a tool, through the Anthropic client; usage without cache counters. */
function messagesTest(fake: () => AnyFake, providerId: string, model: string, upstream: string): void {
  test('messages via the Anthropic SDK, plain and streamed with tool use', async () => {
    const line = { op: 'messages', providerId, modelId: model };
    const plainUsage = nextUsage(fake());
    const plain = await ids.call(() => anthropic.messages.create({ model, max_tokens: 64, messages: ask('plain') }));
    assert.deepEqual(plain.result.content, [{ type: 'text', text: TEXT }]);
    assert.equal(lastJson(fake()).model, upstream);
    assert.equal(fake().requests.at(-1)!.headers['anthropic-version'], ids.lastSent().get('anthropic-version'));
    await assertUsage(svc, plain.reqId, { ...line, usage: messagesUsage(plainUsage, { cacheCounters: false }) });

    const streamedUsage = nextUsage(fake());
    const streamed = await ids.call(() =>
      anthropic.messages.stream({ model, max_tokens: 64, messages: ask('streamed'), tools: TOOLS }).finalMessage(),
    );
    assert.deepEqual(
      streamed.result.content.map((b) =>
        b.type === 'text' ? b.text : b.type === 'tool_use' ? [b.name, b.input] : b.type,
      ),
      [TEXT, ['get_weather', { query: 'fake input for get_weather', index: 0 }]],
    );
    await assertUsage(svc, streamed.reqId, {
      ...line,
      usage: messagesUsage(streamedUsage, { cacheCounters: false, toolCalls: { get_weather: 1 } }),
    });
  });
}

describe('openrouter', () => {
  chatTest({
    fake: () => openrouter,
    providerId: 'openrouter',
    model: 'openrouter/meta/llama-test',
    upstream: 'meta/llama-test',
    expect: (u) => styleAUsage(u, { cost: true }),
    injects: false,
  });
  embeddingsTest(
    () => openrouter,
    'openrouter',
    'openrouter/openai/text-embedding-3-small',
    'openai/text-embedding-3-small',
  );

  test('the stored key and only it goes upstream', () => {
    const calls = openrouter.requests.filter((r) => r.method === 'POST');
    assert.ok(calls.length >= 3);
    for (const r of calls) assert.equal(r.headers.authorization, `Bearer ${KEYS.openrouter}`);
  });
});

describe('openai_compatible', () => {
  chatTest({
    fake: () => compatible,
    providerId: 'openai-compatible',
    model: 'openai-compatible/qwen-chat',
    upstream: 'qwen-chat',
    expect: (u) => styleAUsage(u),
    injects: true,
  });
  embeddingsTest(() => compatible, 'openai-compatible', 'openai-compatible/bge-embed-small', 'bge-embed-small');

  rerankTest(
    () => compatible,
    KEYS.compatible,
    'openai-compatible',
    'openai-compatible/bge-reranker-base',
    'house-reranker',
    'bge-reranker-base',
  );
});

describe('ollama', () => {
  chatTest({
    fake: () => ollama,
    providerId: 'ollama',
    model: 'ollama/llama3.2:latest',
    upstream: 'llama3.2:latest',
    // Ollama reports the three totals only: no cached or reasoning figures.
    expect: (u) => styleAUsage(u, { details: false }),
    injects: true,
  });
  embeddingsTest(() => ollama, 'ollama', 'ollama/nomic-embed-text:latest', 'nomic-embed-text:latest');
  messagesTest(() => ollama, 'ollama', 'ollama/llama3.2:latest', 'llama3.2:latest');
});

describe('llamacpp', () => {
  chatTest({
    fake: () => llamacpp,
    providerId: 'llamacpp',
    model: 'llamacpp/qwen-local',
    upstream: 'qwen-local',
    expect: (u) => styleAUsage(u),
    injects: true,
  });
  messagesTest(() => llamacpp, 'llamacpp', 'llamacpp/qwen-local', 'qwen-local');

  test('count_tokens via the Anthropic SDK: the server’s count, counted but not metered', async () => {
    const usage = nextUsage(llamacpp);
    const { result, reqId } = await ids.call(() =>
      anthropic.messages.countTokens({ model: 'llamacpp/qwen-local', messages: ask('count') }),
    );
    assert.deepEqual(result, { input_tokens: usage.inputTokens });
    assert.deepEqual(
      [llamacpp.requests.at(-1)!.path, lastJson(llamacpp).model],
      ['/v1/messages/count_tokens', 'qwen-local'],
    );
    await assertUsage(svc, reqId, {
      op: 'messages.count_tokens',
      providerId: 'llamacpp',
      modelId: 'llamacpp/qwen-local',
      usage: NOTHING_REPORTED,
    });
  });
  rerankTest(
    () => llamacpp,
    KEYS.llamacpp,
    'llamacpp',
    'llamacpp/bge-reranker-v2',
    'llamacpp/bge-reranker-v2',
    'bge-reranker-v2',
  );
});

describe('what never leaves or gets logged', () => {
  const all = () => [...openrouter.requests, ...compatible.requests, ...llamacpp.requests, ...ollama.requests];

  test('no upstream request carried the local token', () => {
    for (const fake of [openrouter, compatible, llamacpp, ollama])
      assertTokenNeverUpstream(svc.adminToken, fake.requests);
  });

  test('prompts and answers never reach the log', () => {
    assertContentNeverLogged(svc, all());
  });
});
