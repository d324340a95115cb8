import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { listModels } from '../../../../workers/proxy/list-models.ts';
import { ollamaFamilies } from '../../../../workers/proxy/providers/ollama/models.ts';
import * as fake from '../../../fakes/ollama.ts';
import { assertCredentialOnlyIn, targetFor } from '../helpers.ts';

const KEY = 'proxy-token-for-ollama-0123456789';
const GENERATIVE = ['styleA.chat_completions', 'styleB.messages'];

describe('ollamaFamilies', () => {
  it('a generative model serves chat completions and messages', () =>
    assert.deepEqual(ollamaFamilies('llama3.2:latest', ['llama']), GENERATIVE));
  it('a name with "embed" is an embedding model', () =>
    assert.deepEqual(ollamaFamilies('nomic-embed-text:latest', ['nomic-bert']), ['styleA.embeddings']));
  it('a BERT-family encoder is an embedding model whatever its name', () => {
    assert.deepEqual(ollamaFamilies('all-minilm:l6-v2', ['bert']), ['styleA.embeddings']);
    assert.deepEqual(ollamaFamilies('bge-m3:latest', ['xlm-roberta']), ['styleA.embeddings']);
  });
});

describe('listModels: ollama', () => {
  let upstream: fake.OllamaFake;
  before(async () => {
    upstream = await fake.start({ apiKey: KEY });
    upstream.setModels([
      { name: 'llama3.2:latest', family: 'llama' },
      { name: 'qwen3:8b', family: 'qwen3', parameterSize: '8.2B' },
      { name: 'nomic-embed-text:latest', family: 'nomic-bert', parameterSize: '137M', quantization: 'F16' },
    ]);
  });
  after(() => upstream.close());

  it('lists /api/tags by name with its tag', async () => {
    const models = await listModels(targetFor('ollama', upstream.baseUrl), KEY);
    assert.deepEqual(models, [
      {
        upstreamModelId: 'llama3.2:latest',
        displayName: null,
        created: null,
        contextWindow: null,
        families: GENERATIVE,
      },
      { upstreamModelId: 'qwen3:8b', displayName: null, created: null, contextWindow: null, families: GENERATIVE },
      {
        upstreamModelId: 'nomic-embed-text:latest',
        displayName: null,
        created: null,
        contextWindow: null,
        families: ['styleA.embeddings'],
      },
    ]);
    const req = upstream.requests.at(-1);
    assert.equal(req?.method, 'GET');
    assert.equal(req?.path, '/api/tags');
  });

  it('sends a credential as a Bearer token only, for a daemon behind an authenticating proxy', async () => {
    await listModels(targetFor('ollama', upstream.baseUrl), KEY);
    const req = upstream.requests.at(-1);
    assert.ok(req);
    assertCredentialOnlyIn(req, KEY, 'authorization', `Bearer ${KEY}`);
  });

  it('sends no Authorization header without a credential', async () => {
    const open = await fake.start();
    try {
      open.setModels([{ name: 'llama3.2:latest' }]);
      assert.equal((await listModels(targetFor('ollama', open.baseUrl), null)).length, 1);
      assert.equal(open.requests.at(-1)?.headers.authorization, undefined);
    } finally {
      await open.close();
    }
  });
});
