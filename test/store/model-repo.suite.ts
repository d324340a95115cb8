import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { openStoreEnv } from '../../store/env.ts';
import { modelRepo, type ModelRecord } from '../../store/model-repo.ts';

// A model ID holds an upstream's model ID. The edge bounds it now, but a record with a longer one (a provider
// that listed it, then patched to hide it) once failed the whole commit; the repository keys any length.

function record(upstreamModelId: string): ModelRecord {
  return {
    id: `openai/${upstreamModelId}`,
    providerId: 'openai',
    upstreamModelId,
    displayName: 'm',
    families: ['styleA.chat_completions'],
    aliases: [],
    hidden: true,
    contextWindow: null,
    pricing: null,
    acceleration: null,
    createdAt: 1,
    updatedAt: 1,
  };
}

describe('modelRepo', () => {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-models-'));
  const env = openStoreEnv(dir);
  after(async () => {
    await env.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('stores, lists and removes a record whose ID is far past LMDB’s key limit, beside a short one', async () => {
    const repo = modelRepo(env);
    const long = record('m'.repeat(10_000));
    const short = record('gpt-4o');
    await env.commit(() => {
      repo.stagePut(long);
      repo.stagePut(short);
    });
    assert.deepEqual(
      repo
        .all()
        .map((r) => r.id)
        .sort(),
      [long.id, short.id].sort(),
    );
    assert.equal(env.db<ModelRecord>('models').get(short.id)?.upstreamModelId, 'gpt-4o', 'a short ID is its own key');
    await env.commit(() => repo.stageRemove(long.id));
    assert.deepEqual(
      repo.all().map((r) => r.id),
      [short.id],
    );
  });
});
