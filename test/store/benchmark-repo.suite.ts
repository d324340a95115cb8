import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { BenchmarkResult } from '../../protocol/http/runtime.ts';
import { benchmarkRepo, MAX_KEPT_BENCHMARKS, type BenchmarkRepo } from '../../store/benchmark-repo.ts';
import { openStoreEnv, type StoreEnv } from '../../store/env.ts';
import { removeDirs, tempDataDir } from '../helpers/usage.ts';

// Benchmark results: newest first, narrowed by model, paged, and bounded (the oldest leave), across a reopen.

const dirs: string[] = [];
let dir: string;
let env: StoreEnv;
let repo: BenchmarkRepo;

const record = (i: number, modelId: string): BenchmarkResult => ({
  // Job IDs sort by time; a zero-padded counter sorts the same way.
  jobId: `job_${String(i).padStart(26, '0')}`,
  modelId,
  tuning: { contextSize: 0, threads: 0, gpuLayers: 0, parallel: 0, batchSize: 0 },
  promptTokensPerSecond: i + 0.5,
  generationTokensPerSecond: i,
  promptTokens: 8,
  generatedTokens: 4,
  loadMs: 10,
  at: new Date(1_700_000_000_000 + i * 1000).toISOString(),
});

before(() => {
  dir = tempDataDir(dirs);
  env = openStoreEnv(dir);
  repo = benchmarkRepo(env);
});
after(async () => {
  await env.close();
  removeDirs(dirs);
});

describe('benchmarkRepo', () => {
  test('lists newest first, by model, in pages', async () => {
    for (let i = 1; i <= 5; i++)
      await env.commit(() => repo.stagePut(record(i, i % 2 ? 'embedded/a.gguf' : 'embedded/b.gguf')));
    assert.deepEqual(
      repo.list({ limit: 10, offset: 0 }).data.map((r) => r.generationTokensPerSecond),
      [5, 4, 3, 2, 1],
    );
    assert.deepEqual(repo.list({ modelId: 'embedded/a.gguf', limit: 2, offset: 0 }), {
      data: [record(5, 'embedded/a.gguf'), record(3, 'embedded/a.gguf')],
      hasMore: true,
    });
    assert.deepEqual(repo.list({ modelId: 'embedded/a.gguf', limit: 2, offset: 2 }), {
      data: [record(1, 'embedded/a.gguf')],
      hasMore: false,
    });
    assert.deepEqual(repo.list({ modelId: 'embedded/none', limit: 2, offset: 0 }), { data: [], hasMore: false });
  });

  test('keeps the newest results only, across a reopen', async () => {
    await env.commit(() => {
      for (let i = 6; i <= MAX_KEPT_BENCHMARKS + 10; i++) repo.stagePut(record(i, 'embedded/a.gguf'));
    });
    await env.close();
    env = openStoreEnv(dir);
    repo = benchmarkRepo(env);
    const all = repo.list({ limit: MAX_KEPT_BENCHMARKS + 10, offset: 0 }).data;
    assert.equal(all.length, MAX_KEPT_BENCHMARKS);
    assert.equal(all[0]!.generationTokensPerSecond, MAX_KEPT_BENCHMARKS + 10);
    assert.equal(all.at(-1)!.generationTokensPerSecond, 11);
  });
});
