import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { listModels } from '../../../../workers/proxy/list-models.ts';
import { compatibleFamilies } from '../../../../workers/proxy/providers/openai_compatible/models.ts';
import * as fake from '../../../fakes/openai.ts';
import { assertCredentialOnlyIn, targetFor } from '../helpers.ts';

const KEY = 'local-vllm-key-0123456789';

describe('compatibleFamilies', () => {
  for (const [id, families] of [
    ['Qwen/Qwen3-8B', ['styleA.chat_completions']],
    ['nomic-ai/nomic-embed-text-v1.5-GGUF', ['styleA.embeddings']],
    ['BAAI/bge-reranker-v2-m3', ['rerank.documents']],
    ['jina-embeddings-v2-reranker', ['rerank.documents']],
  ] as const) {
    it(`${id} -> ${families.join(', ')}`, () => assert.deepEqual(compatibleFamilies(id), families));
  }
});

describe('listModels: openai_compatible', () => {
  let upstream: fake.OpenAIFake;
  before(async () => {
    upstream = await fake.start({ flavour: 'compatible', apiKey: KEY });
    upstream.setModels([
      { id: 'Qwen/Qwen3-8B', created: 1_750_000_000, maxModelLen: 40_960 },
      { id: 'BAAI/bge-m3-embed', created: 1_750_000_001, maxModelLen: 8192 },
      { id: 'BAAI/bge-reranker-v2-m3', created: 1_750_000_002, maxModelLen: 8192 },
    ]);
  });
  after(() => upstream.close());

  it('lists models with families from the ID and the served context from max_model_len', async () => {
    const models = await listModels(targetFor('openai_compatible', upstream.baseUrl), KEY);
    assert.deepEqual(models, [
      {
        upstreamModelId: 'Qwen/Qwen3-8B',
        displayName: null,
        created: 1_750_000_000,
        contextWindow: 40_960,
        families: ['styleA.chat_completions'],
      },
      {
        upstreamModelId: 'BAAI/bge-m3-embed',
        displayName: null,
        created: 1_750_000_001,
        contextWindow: 8192,
        families: ['styleA.embeddings'],
      },
      {
        upstreamModelId: 'BAAI/bge-reranker-v2-m3',
        displayName: null,
        created: 1_750_000_002,
        contextWindow: 8192,
        families: ['rerank.documents'],
      },
    ]);
    const req = upstream.requests.at(-1);
    assert.ok(req);
    assert.equal(req.path, '/v1/models');
    assertCredentialOnlyIn(req, KEY, 'authorization', `Bearer ${KEY}`);
  });

  it('sends no Authorization header without a credential, and no hints (the kind allows none)', async () => {
    const open = await fake.start({ flavour: 'compatible' });
    try {
      open.setModels([{ id: 'local-model' }]);
      const models = await listModels(
        targetFor('openai_compatible', open.baseUrl, { hints: { 'X-Title': 'nope' } }),
        null,
      );
      assert.deepEqual(
        models.map((m) => m.upstreamModelId),
        ['local-model'],
      );
      const req = open.requests.at(-1);
      assert.equal(req?.headers.authorization, undefined);
      assert.equal(req?.headers['x-title'], undefined);
    } finally {
      await open.close();
    }
  });

  it('accepts a server that leaves out `object`, as some local servers do', async () => {
    upstream.failNext(200, { data: [{ id: 'mlx-community/Llama-3.2-3B-Instruct-4bit', created: 1 }] });
    const models = await listModels(targetFor('openai_compatible', upstream.baseUrl), KEY);
    assert.deepEqual(
      models.map((m) => m.upstreamModelId),
      ['mlx-community/Llama-3.2-3B-Instruct-4bit'],
    );
  });
});
