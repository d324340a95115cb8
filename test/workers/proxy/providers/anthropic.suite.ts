import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { listModels } from '../../../../workers/proxy/list-models.ts';
import { anthropicModels } from '../../../../workers/proxy/providers/anthropic/models.ts';
import * as fake from '../../../fakes/anthropic.ts';
import { assertCredentialOnlyIn, assertNoCredential, rejectsWith, targetFor } from '../helpers.ts';

const KEY = 'sk-ant-api03-fake-key-0123456789';

// 45 models, newest first, the way Anthropic orders its list.
const MODELS = Array.from({ length: 45 }, (_, i) => ({
  id: `claude-fake-${String(45 - i).padStart(2, '0')}`,
  displayName: `Claude Fake ${45 - i}`,
  createdAt: new Date(Date.UTC(2025, 0, 45 - i)).toISOString(),
}));

describe('listModels: anthropic', () => {
  let upstream: fake.AnthropicFake;
  before(async () => {
    upstream = await fake.start({ apiKey: KEY, pageSize: 20 });
    upstream.setModels(MODELS);
  });
  after(() => upstream.close());

  it('follows has_more / last_id across three pages and keeps every model once, in order', async () => {
    const before = upstream.requests.length;
    const models = await listModels(targetFor('anthropic', upstream.baseUrl), KEY);
    const pages = upstream.requests.slice(before);
    assert.deepEqual(
      pages.map((r) => [r.path, r.query]),
      [
        ['/v1/models', { limit: '1000' }],
        ['/v1/models', { limit: '1000', after_id: 'claude-fake-26' }],
        ['/v1/models', { limit: '1000', after_id: 'claude-fake-06' }],
      ],
    );
    assert.deepEqual(
      models.map((m) => m.upstreamModelId),
      MODELS.map((m) => m.id),
    );
    assert.deepEqual(models[0], {
      upstreamModelId: 'claude-fake-45',
      displayName: 'Claude Fake 45',
      created: Date.UTC(2025, 0, 45) / 1000,
      contextWindow: null,
      families: ['styleB.messages'],
    });
  });

  it('sends the key in x-api-key only, with anthropic-version on every page', async () => {
    const before = upstream.requests.length;
    await listModels(targetFor('anthropic', upstream.baseUrl), KEY);
    const pages = upstream.requests.slice(before);
    assert.equal(pages.length, 3);
    for (const req of pages) {
      assertCredentialOnlyIn(req, KEY, 'x-api-key', KEY);
      assert.equal(req.headers['anthropic-version'], '2023-06-01');
      assert.equal(req.headers.authorization, undefined);
    }
  });

  it('forwards anthropic-beta from the hints', async () => {
    await listModels(
      targetFor('anthropic', upstream.baseUrl, { hints: { 'Anthropic-Beta': 'fake-beta-2025-01-01' } }),
      KEY,
    );
    assert.equal(upstream.requests.at(-1)?.headers['anthropic-beta'], 'fake-beta-2025-01-01');
  });

  it("maps Anthropic's authentication_error to UPSTREAM_AUTH_FAILED with its type and message", async () => {
    const wrong = 'sk-ant-api03-wrong-key-9876543210';
    const err = await rejectsWith(listModels(targetFor('anthropic', upstream.baseUrl), wrong), 'UPSTREAM_AUTH_FAILED');
    assert.equal(err.details.upstreamStatus, 401);
    assert.equal(err.details.upstreamType, 'authentication_error');
    assert.equal(err.details.upstreamMessage, 'invalid x-api-key');
    assertNoCredential(err, wrong);
  });

  it('without a credential sends no x-api-key and is refused', async () => {
    await rejectsWith(listModels(targetFor('anthropic', upstream.baseUrl), null), 'UPSTREAM_AUTH_FAILED');
    const req = upstream.requests.at(-1);
    assert.equal(req?.headers['x-api-key'], undefined);
    assert.equal(req?.headers['anthropic-version'], '2023-06-01');
  });
});

describe('the anthropic fake pages like the API', () => {
  let upstream: fake.AnthropicFake;
  before(async () => {
    upstream = await fake.start({ apiKey: KEY });
    upstream.setModels(MODELS.slice(0, 5));
  });
  after(() => upstream.close());

  async function get(query: string): Promise<{ status: number; body: Record<string, unknown> }> {
    const res = await fetch(`${upstream.baseUrl}/v1/models${query}`, {
      headers: { 'x-api-key': KEY, 'anthropic-version': '2023-06-01' },
    });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  }

  it('before_id returns the page just before the cursor', async () => {
    const { body } = await get('?limit=2&before_id=claude-fake-41');
    assert.deepEqual(body, {
      data: [
        { type: 'model', id: 'claude-fake-43', display_name: 'Claude Fake 43', created_at: MODELS[2]?.createdAt },
        { type: 'model', id: 'claude-fake-42', display_name: 'Claude Fake 42', created_at: MODELS[3]?.createdAt },
      ],
      has_more: true,
      first_id: 'claude-fake-43',
      last_id: 'claude-fake-42',
    });
  });

  it('rejects a limit above 1000 and a request without anthropic-version', async () => {
    assert.equal((await get('?limit=1001')).status, 400);
    const res = await fetch(`${upstream.baseUrl}/v1/models`, { headers: { 'x-api-key': KEY } });
    assert.equal(res.status, 400);
    assert.deepEqual(((await res.json()) as { error: unknown }).error, {
      type: 'invalid_request_error',
      message: 'anthropic-version: header is required',
    });
  });
});

describe('anthropicModels.parseList', () => {
  it('rejects a page that has more but names no cursor', () => {
    assert.throws(() => anthropicModels.parseList({ data: [], has_more: true, first_id: null, last_id: null }), {
      code: 'UPSTREAM_ERROR',
    });
  });

  it('rejects a body without has_more', () => {
    assert.throws(() => anthropicModels.parseList({ data: [] }), { code: 'UPSTREAM_ERROR' });
  });

  it('skips entries without a string id and reads a bad created_at as unknown', () => {
    const page = anthropicModels.parseList({
      data: [
        { type: 'model', display_name: 'No ID' },
        { type: 'model', id: 42 },
        { type: 'model', id: 'claude-x', created_at: 'yesterday' },
      ],
      has_more: false,
      first_id: 'claude-x',
      last_id: 'claude-x',
    });
    assert.deepEqual(page, {
      models: [
        {
          upstreamModelId: 'claude-x',
          displayName: null,
          created: null,
          contextWindow: null,
          families: ['styleB.messages'],
        },
      ],
      next: null,
    });
  });
});
