import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { listModels } from '../../../../workers/proxy/list-models.ts';
import { llamacppFamilies } from '../../../../workers/proxy/providers/llamacpp/models.ts';
import * as fake from '../../../fakes/openai.ts';
import { assertCredentialOnlyIn, targetFor } from '../helpers.ts';

const KEY = 'llama-server-api-key-0123456789';
const GENERATIVE = ['styleA.chat_completions', 'styleB.messages'];

describe('llamacppFamilies', () => {
  it('generative', () => assert.deepEqual(llamacppFamilies('qwen3-0.6b-q8_0.gguf'), GENERATIVE));
  it('embedding', () => assert.deepEqual(llamacppFamilies('nomic-embed-text-v1.5.Q8_0.gguf'), ['styleA.embeddings']));
  it('reranker', () => assert.deepEqual(llamacppFamilies('bge-reranker-v2-m3-Q8_0.gguf'), ['rerank.documents']));
});

describe('listModels: llamacpp', () => {
  let upstream: fake.OpenAIFake;
  before(async () => {
    upstream = await fake.start({ flavour: 'llamacpp', apiKey: KEY });
    upstream.setModels([
      { id: 'qwen3-0.6b-q8_0.gguf', created: 1_760_000_000 },
      { id: 'bge-reranker-v2-m3-Q8_0.gguf', created: 1_760_000_000 },
    ]);
  });
  after(() => upstream.close());

  it('reads `data` from GET {root}/v1/models', async () => {
    const models = await listModels(targetFor('llamacpp', upstream.baseUrl), KEY);
    assert.deepEqual(models, [
      {
        upstreamModelId: 'qwen3-0.6b-q8_0.gguf',
        displayName: null,
        created: 1_760_000_000,
        contextWindow: null,
        families: GENERATIVE,
      },
      {
        upstreamModelId: 'bge-reranker-v2-m3-Q8_0.gguf',
        displayName: null,
        created: 1_760_000_000,
        contextWindow: null,
        families: ['rerank.documents'],
      },
    ]);
    const req = upstream.requests.at(-1);
    assert.ok(req);
    assert.equal(req.path, '/v1/models');
    assertCredentialOnlyIn(req, KEY, 'authorization', `Bearer ${KEY}`);
  });

  it('prefers `data` when the `models` array disagrees', async () => {
    upstream.failNext(200, {
      models: [{ name: 'from-models', model: 'from-models' }],
      object: 'list',
      data: [{ id: 'from-data', object: 'model' }],
    });
    const models = await listModels(targetFor('llamacpp', upstream.baseUrl), KEY);
    assert.deepEqual(
      models.map((m) => m.upstreamModelId),
      ['from-data'],
    );
  });

  it('accepts a body with only the `models` array, named by `model`', async () => {
    upstream.failNext(200, {
      models: [{ name: 'Embed Model', model: 'nomic-embed-text-v1.5.gguf' }, { name: 'no-model-field' }, { size: 1 }],
    });
    const models = await listModels(targetFor('llamacpp', upstream.baseUrl), KEY);
    assert.deepEqual(
      models.map((m) => [m.upstreamModelId, m.families]),
      [
        ['nomic-embed-text-v1.5.gguf', ['styleA.embeddings']],
        ['no-model-field', GENERATIVE],
      ],
    );
  });

  it('rejects a body with `data` that is not a list, even beside a valid `models`', async () => {
    upstream.failNext(200, { models: [{ name: 'x', model: 'x' }], data: 'nope' });
    await assert.rejects(listModels(targetFor('llamacpp', upstream.baseUrl), KEY), { code: 'UPSTREAM_ERROR' });
  });
});
