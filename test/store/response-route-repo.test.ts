import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { openStoreEnv } from '../../store/env.ts';
import { responseRouteRepo } from '../../store/response-route-repo.ts';

// Regression: remember() wrote with lmdb's asynchronous put, which reads see only once committed, so a
// client that retrieved a response right after creating it sometimes got 404 NOT_FOUND from the gateway.

describe('responseRouteRepo', () => {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-routes-'));
  const env = openStoreEnv(dir);
  after(async () => {
    await env.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('a route is readable at once after remember, and still after the commit', async () => {
    const repo = responseRouteRepo(env);
    repo.remember('resp_1', 'openai');
    assert.equal(repo.providerOf('resp_1'), 'openai');
    await env.root.flushed;
    assert.equal(repo.providerOf('resp_1'), 'openai');
    assert.equal(responseRouteRepo(env).providerOf('resp_1'), 'openai', 'committed, not only in memory');
  });

  it('the latest route of an ID wins', async () => {
    const repo = responseRouteRepo(env);
    repo.remember('resp_2', 'a');
    repo.remember('resp_2', 'b');
    assert.equal(repo.providerOf('resp_2'), 'b');
    await env.root.flushed;
    assert.equal(repo.providerOf('resp_2'), 'b');
  });
});
