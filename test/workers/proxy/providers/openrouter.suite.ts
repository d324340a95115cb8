import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { listModels } from '../../../../workers/proxy/list-models.ts';
import { openrouterFamilies } from '../../../../workers/proxy/providers/openrouter/models.ts';
import * as fake from '../../../fakes/openai.ts';
import { assertCredentialOnlyIn, targetFor } from '../helpers.ts';

const KEY = 'sk-or-v1-fake-key-0123456789abcdef';

describe('openrouterFamilies', () => {
  it('text output -> chat completions and responses', () => {
    assert.deepEqual(openrouterFamilies(['text']), ['styleA.chat_completions', 'styleA.responses']);
    assert.deepEqual(openrouterFamilies(['image', 'text']), ['styleA.chat_completions', 'styleA.responses']);
  });
  it('embeddings output -> embeddings only', () =>
    assert.deepEqual(openrouterFamilies(['embeddings']), ['styleA.embeddings']));
  it('image-only output -> none', () => assert.deepEqual(openrouterFamilies(['image']), []));
});

describe('listModels: openrouter', () => {
  let upstream: fake.OpenAIFake;
  before(async () => {
    upstream = await fake.start({ flavour: 'openrouter', apiKey: KEY });
    upstream.setModels([
      {
        id: 'anthropic/claude-sonnet-4',
        name: 'Anthropic: Claude Sonnet 4',
        created: 1_747_930_371,
        contextLength: 200_000,
      },
      {
        id: 'openai/text-embedding-3-small',
        name: 'OpenAI: Text Embedding 3 Small',
        contextLength: 8192,
        outputModalities: ['embeddings'],
      },
      {
        id: 'google/gemini-2.5-flash-image',
        name: 'Google: Gemini 2.5 Flash Image',
        contextLength: 32_768,
        outputModalities: ['image', 'text'],
      },
      { id: 'fake/image-only', name: 'Image only', outputModalities: ['image'] },
    ]);
  });
  after(() => upstream.close());

  it('asks for text and embedding models and reads name, context length and modalities', async () => {
    const models = await listModels(targetFor('openrouter', upstream.baseUrl), KEY);
    assert.deepEqual(models, [
      {
        upstreamModelId: 'anthropic/claude-sonnet-4',
        displayName: 'Anthropic: Claude Sonnet 4',
        created: 1_747_930_371,
        contextWindow: 200_000,
        families: ['styleA.chat_completions', 'styleA.responses'],
      },
      {
        upstreamModelId: 'openai/text-embedding-3-small',
        displayName: 'OpenAI: Text Embedding 3 Small',
        created: 1_700_000_000,
        contextWindow: 8192,
        families: ['styleA.embeddings'],
      },
      {
        upstreamModelId: 'google/gemini-2.5-flash-image',
        displayName: 'Google: Gemini 2.5 Flash Image',
        created: 1_700_000_000,
        contextWindow: 32_768,
        families: ['styleA.chat_completions', 'styleA.responses'],
      },
    ]);
    const req = upstream.requests.at(-1);
    assert.equal(req?.path, '/api/v1/models');
    assert.deepEqual(req?.query, { output_modalities: 'text,embeddings' });
  });

  it('sends the key as a Bearer token only, and the attribution hints', async () => {
    await listModels(
      targetFor('openrouter', upstream.baseUrl, {
        hints: { 'http-referer': 'https://app.example', 'X-Title': 'Switchyard test' },
      }),
      KEY,
    );
    const req = upstream.requests.at(-1);
    assert.ok(req);
    assertCredentialOnlyIn(req, KEY, 'authorization', `Bearer ${KEY}`);
    assert.equal(req.headers['http-referer'], 'https://app.example');
    assert.equal(req.headers['x-title'], 'Switchyard test');
  });

  it('reads entries from before output_modalities existed by their modality string', async () => {
    upstream.failNext(200, {
      data: [{ id: 'old/embedder', architecture: { modality: 'text->embeddings' } }, { id: 'old/chat' }],
    });
    const models = await listModels(targetFor('openrouter', upstream.baseUrl), KEY);
    assert.deepEqual(
      models.map((m) => [m.upstreamModelId, m.families]),
      [
        ['old/embedder', ['styleA.embeddings']],
        ['old/chat', ['styleA.chat_completions', 'styleA.responses']],
      ],
    );
  });
});
