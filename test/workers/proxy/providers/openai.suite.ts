import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { listModels } from '../../../../workers/proxy/list-models.ts';
import { openaiFamilies } from '../../../../workers/proxy/providers/openai/models.ts';
import * as fake from '../../../fakes/openai.ts';
import { assertCredentialOnlyIn, targetFor } from '../helpers.ts';

const KEY = 'sk-proj-openai-fake-key-0123456789';

describe('openaiFamilies', () => {
  for (const [id, families] of [
    ['gpt-4.1-mini', ['styleA.chat_completions', 'styleA.responses']],
    ['o3', ['styleA.chat_completions', 'styleA.responses']],
    ['text-embedding-3-small', ['styleA.embeddings']],
    ['gpt-image-1', ['styleA.images']],
    ['dall-e-3', ['styleA.images']],
    ['tts-1-hd', ['styleA.audio_speech']],
    ['gpt-4o-mini-tts', ['styleA.audio_speech']],
    ['whisper-1', ['styleA.audio_transcriptions']],
    ['gpt-4o-transcribe', ['styleA.audio_transcriptions']],
    ['omni-moderation-latest', []],
    ['text-moderation-stable', []],
    ['gpt-realtime', []],
    ['sora-2', []],
    ['davinci-002', []],
    ['gpt-3.5-turbo-instruct', []],
    ['o1-pro', ['styleA.responses']],
    ['gpt-5-pro-2025-10-06', ['styleA.responses']],
    ['gpt-5-codex', ['styleA.responses']],
    ['o3-deep-research', ['styleA.responses']],
    ['computer-use-preview', ['styleA.responses']],
    ['gpt-4o-audio-preview', ['styleA.chat_completions']],
    ['gpt-4o-search-preview', ['styleA.chat_completions']],
  ] as const) {
    it(`${id} -> ${families.join(', ') || 'none'}`, () => assert.deepEqual(openaiFamilies(id), families));
  }
});

describe('listModels: openai', () => {
  let upstream: fake.OpenAIFake;
  before(async () => {
    upstream = await fake.start({ flavour: 'openai', apiKey: KEY });
    upstream.setModels([
      { id: 'gpt-4.1', created: 1_744_316_542, ownedBy: 'system' },
      { id: 'text-embedding-3-large', created: 1_705_953_180 },
      { id: 'whisper-1', created: 1_677_532_384, ownedBy: 'openai-internal' },
      { id: 'omni-moderation-latest', created: 1_731_689_265 },
    ]);
  });
  after(() => upstream.close());

  it('lists every model with its families and creation time from GET {baseUrl}/models', async () => {
    const models = await listModels(targetFor('openai', upstream.baseUrl), KEY);
    assert.deepEqual(models, [
      {
        upstreamModelId: 'gpt-4.1',
        displayName: null,
        created: 1_744_316_542,
        contextWindow: null,
        families: ['styleA.chat_completions', 'styleA.responses'],
      },
      {
        upstreamModelId: 'text-embedding-3-large',
        displayName: null,
        created: 1_705_953_180,
        contextWindow: null,
        families: ['styleA.embeddings'],
      },
      {
        upstreamModelId: 'whisper-1',
        displayName: null,
        created: 1_677_532_384,
        contextWindow: null,
        families: ['styleA.audio_transcriptions'],
      },
      {
        upstreamModelId: 'omni-moderation-latest',
        displayName: null,
        created: 1_731_689_265,
        contextWindow: null,
        families: [],
      },
    ]);
    const req = upstream.requests.at(-1);
    assert.ok(req);
    assert.equal(req.method, 'GET');
    assert.equal(req.path, '/v1/models');
    assert.deepEqual(req.query, {});
  });

  it('sends the key as a Bearer token and nowhere else', async () => {
    await listModels(targetFor('openai', upstream.baseUrl), KEY);
    const req = upstream.requests.at(-1);
    assert.ok(req);
    assertCredentialOnlyIn(req, KEY, 'authorization', `Bearer ${KEY}`);
  });

  it("forwards the record's allow-listed hints in their canonical spelling, and no other header", async () => {
    const hints = {
      'openai-organization': 'org-abc',
      'OpenAI-Project': 'proj_123',
      'x-api-key': 'smuggled',
      Authorization: 'Bearer smuggled',
    };
    await listModels(targetFor('openai', upstream.baseUrl, { hints }), KEY);
    const req = upstream.requests.at(-1);
    assert.ok(req);
    const names = [];
    for (let i = 0; i < req.rawHeaders.length; i += 2) names.push(req.rawHeaders[i]);
    assert.ok(names.includes('OpenAI-Organization'), names.join());
    assert.equal(req.headers['openai-organization'], 'org-abc');
    assert.equal(req.headers['openai-project'], 'proj_123');
    assert.equal(req.headers['x-api-key'], undefined);
    assert.equal(req.headers.authorization, `Bearer ${KEY}`);
  });

  it('tolerates a trailing slash on baseUrl', async () => {
    const models = await listModels(targetFor('openai', `${upstream.baseUrl}/`), KEY);
    assert.equal(models.length, 4);
    assert.equal(upstream.requests.at(-1)?.path, '/v1/models');
  });
});
