import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import OpenAI from 'openai';
import * as ollamaFake from './ollama.ts';
import * as openaiFake from './openai.ts';
import { parseSse, postJson } from './sse-client.ts';

// The flavour-specific routes and quirks of the styleA fake: rerank (vLLM, llama-server), OpenRouter's cost
// and JSON transcription, llama-server's keys, and an Ollama that ignores encoding_format.

interface RerankAnswer {
  id: string;
  object?: string;
  results: Array<{ index: number; relevance_score: number; document?: { text: string } }>;
  usage: Record<string, number>;
}

const DOCS = ['bread needs flour and water', 'pandas are bears', 'the recipe for bread: flour, water, salt'];

describe('rerank', () => {
  const fakes: openaiFake.OpenAIFake[] = [];
  after(() => Promise.all(fakes.map((f) => f.close())));
  const start = async (flavour: openaiFake.Flavour): Promise<openaiFake.OpenAIFake> => {
    const fake = await openaiFake.start({ flavour });
    fakes.push(fake);
    return fake;
  };

  it('vLLM: sorted by score, top_n honoured, documents returned, usage.total_tokens; also at /rerank', async () => {
    const fake = await start('compatible');
    for (const url of [`${fake.baseUrl}/rerank`, `${new URL(fake.baseUrl).origin}/rerank`]) {
      const answer = (await (
        await postJson(url, { model: 'bge', query: 'bread recipe', documents: DOCS, top_n: 2 })
      ).json()) as RerankAnswer;
      assert.equal(answer.results.length, 2);
      assert.deepEqual(answer.results.map((r) => r.index).sort(), [0, 2]);
      assert.ok((answer.results[0]?.relevance_score ?? 0) >= (answer.results[1]?.relevance_score ?? 0));
      assert.equal(answer.results[0]?.document?.text, DOCS[answer.results[0]?.index ?? -1]);
      assert.deepEqual(answer.usage, { total_tokens: openaiFake.DEFAULT_USAGE.inputTokens });
    }
  });

  it('llama-server: every alias, text only with return_text, prompt_tokens in usage', async () => {
    const fake = await start('llamacpp');
    for (const path of ['/v1/rerank', '/rerank', '/v1/reranking', '/reranking']) {
      const answer = (await (
        await postJson(`${fake.baseUrl}${path}`, { query: 'pandas', documents: DOCS })
      ).json()) as RerankAnswer;
      assert.equal(answer.object, 'list');
      assert.equal(answer.results.length, 3);
      assert.equal(answer.results[0]?.document, undefined);
      assert.equal(answer.usage.prompt_tokens, openaiFake.DEFAULT_USAGE.inputTokens);
    }
    const withText = (await (
      await postJson(`${fake.baseUrl}/rerank`, { query: 'pandas', documents: DOCS, return_text: true })
    ).json()) as RerankAnswer;
    assert.equal(withText.results[0]?.document?.text, 'pandas are bears');
  });

  it('is not served by the openai flavour', async () => {
    const fake = await start('openai');
    assert.equal((await postJson(`${fake.baseUrl}/rerank`, { query: 'q', documents: DOCS })).status, 404);
  });
});

describe('openrouter flavour', () => {
  let fake: openaiFake.OpenAIFake;
  before(async () => {
    fake = await openaiFake.start({ flavour: 'openrouter', apiKey: 'or-key' });
  });
  after(() => fake.close());

  it('reports usage.cost on chat', async () => {
    fake.setUsage({ costUsd: 0.5 });
    const client = new OpenAI({ baseURL: fake.baseUrl, apiKey: 'or-key', maxRetries: 0 });
    const completion = await client.chat.completions.create({
      model: 'openai/gpt-test',
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal((completion.usage as OpenAI.CompletionUsage & { cost?: number }).cost, 0.5);
  });

  it('always ends a chat stream with the usage chunk, cost included, even when not asked', async () => {
    fake.setUsage({ costUsd: 0.5 });
    const response = await postJson(
      `${fake.baseUrl}/chat/completions`,
      { model: 'm', messages: [], stream: true },
      { authorization: 'Bearer or-key' },
    );
    const events = parseSse(await response.text());
    assert.equal(events.at(-1)?.data, '[DONE]');
    const chunks = events
      .slice(0, -1)
      .map((e) => JSON.parse(e.data) as { choices: unknown[]; usage?: { cost: number } });
    assert.deepEqual(
      chunks.map((c) => c.usage?.cost),
      [...Array(chunks.length - 1).fill(undefined), 0.5],
    );
    assert.deepEqual(chunks.at(-1)?.choices, []);
  });

  it('transcribes JSON input_audio, and refuses a body without it', async () => {
    const headers = { authorization: 'Bearer or-key' };
    const ok = await postJson(
      `${fake.baseUrl}/audio/transcriptions`,
      { model: 'openai/whisper-1', input_audio: { data: 'UklGRg==', format: 'wav' } },
      headers,
    );
    const answer = (await ok.json()) as { text: string; usage: { cost: number } };
    assert.deepEqual([answer.text, answer.usage.cost], [openaiFake.DEFAULT_OUTPUT.transcript, 0.5]);
    const refused = await postJson(`${fake.baseUrl}/audio/transcriptions`, { model: 'openai/whisper-1' }, headers);
    assert.equal(refused.status, 400);
    assert.deepEqual(((await refused.json()) as { error: { code: number } }).error.code, 400);
  });
});

describe('llamacpp flavour keys', () => {
  let fake: openaiFake.OpenAIFake;
  before(async () => {
    fake = await openaiFake.start({ flavour: 'llamacpp', apiKey: 'llama-key' });
  });
  after(() => fake.close());

  it('takes the key as a Bearer token or x-api-key, and refuses a wrong one in its own shape', async () => {
    const body = { model: 'local', messages: [{ role: 'user', content: 'hi' }] };
    assert.equal(
      (await postJson(`${fake.baseUrl}/v1/chat/completions`, body, { authorization: 'Bearer llama-key' })).status,
      200,
    );
    assert.equal(
      (await postJson(`${fake.baseUrl}/v1/chat/completions`, body, { 'x-api-key': 'llama-key' })).status,
      200,
    );
    const wrong = await postJson(`${fake.baseUrl}/v1/chat/completions`, body, { authorization: 'Bearer nope' });
    assert.deepEqual(
      [wrong.status, await wrong.json()],
      [401, { error: { code: 401, message: 'Invalid API Key', type: 'authentication_error' } }],
    );
  });
});

describe('ollama without base64 embeddings', () => {
  let fake: ollamaFake.OllamaFake;
  before(async () => {
    fake = await ollamaFake.start({ base64Embeddings: false });
  });
  after(() => fake.close());

  it('answers floats even when asked for base64, as old Ollama did', async () => {
    const response = await postJson(`${fake.baseUrl}/v1/embeddings`, {
      model: 'nomic',
      input: 'x',
      encoding_format: 'base64',
    });
    const answer = (await response.json()) as { data: Array<{ embedding: unknown }> };
    assert.ok(Array.isArray(answer.data[0]?.embedding));
  });
});
