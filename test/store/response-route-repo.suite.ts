import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { openStoreEnv } from '../../store/env.ts';
import { responseRouteRepo } from '../../store/response-route-repo.ts';
import { createRouteWrites, createRouteWritesBuffer } from '../../state/route-writes.ts';

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

  // Regression (CI, two edge threads): a response created on one edge thread was named on a connection the other
  // served before the first thread's write committed, and the other answered 404.
  it("a miss waits for another thread's route write to commit; with none under way, it misses at once", async () => {
    const shared = createRouteWritesBuffer();
    const [writer, reader] = [
      responseRouteRepo(env, createRouteWrites(shared)),
      responseRouteRepo(env, createRouteWrites(shared)),
    ];
    const stored = writer.remember('resp_elsewhere', 'openai-b');
    assert.equal(reader.providerOf('resp_elsewhere'), undefined, 'not committed yet, and not in this repo’s memory');
    assert.equal(await reader.find('resp_elsewhere'), 'openai-b');
    await stored;
    const alone = responseRouteRepo(env, createRouteWrites(createRouteWritesBuffer()));
    const turn = new Promise((resolve) => setImmediate(() => resolve('a turn later')));
    assert.equal(
      await Promise.race([alone.find('resp_never_made', 60_000), turn]),
      undefined,
      'nothing under way: no wait',
    );
  });

  // Regression (W2.6): an ID of 1,979 characters or more made lmdb-js throw inside remember(), uncaught.
  it('routes an ID of any length, past LMDB’s key limit, readable at once and after the commit', async () => {
    const repo = responseRouteRepo(env);
    const ids = [`resp_${'a'.repeat(1974)}`, `resp_${'b'.repeat(100_000)}`, '字'.repeat(1000)];
    const stored = ids.map((id, i) => repo.remember(id, `provider-${i}`));
    ids.forEach((id, i) => assert.equal(repo.providerOf(id), `provider-${i}`));
    await Promise.all(stored);
    ids.forEach((id, i) => assert.equal(responseRouteRepo(env).providerOf(id), `provider-${i}`, 'committed'));
    assert.equal(
      repo.providerOf(`resp_${'a'.repeat(1975)}`),
      undefined,
      'a longer ID with the same start is another ID',
    );
  });

  it('keeps a short ID under its own key, where routes stored before keys were bounded are', async () => {
    await responseRouteRepo(env).remember('resp_short', 'openai');
    assert.equal(env.db<{ providerId: string }>('response-routes').get('resp_short')?.providerId, 'openai');
  });

  it('a route that cannot be stored rejects the promise and throws nothing', async () => {
    const dir2 = mkdtempSync(join(tmpdir(), 'switchyard-routes-closed-'));
    const closed = openStoreEnv(dir2);
    const repo = responseRouteRepo(closed);
    await closed.close();
    let stored: Promise<void> | undefined;
    assert.doesNotThrow(() => (stored = repo.remember('resp_late', 'openai')));
    await assert.rejects(stored!, /closed/);
    rmSync(dir2, { recursive: true, force: true });
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
