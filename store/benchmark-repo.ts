import type { BenchmarkResult } from '../protocol/http/runtime.ts';
import type { StoreEnv } from './env.ts';

// Benchmark results keyed by their job ID (`job_` and a ULID: keys sort by time, so a reverse scan is newest
// first). Bounded: past MAX_KEPT the oldest leave as a new one is kept. The model ID in a record is a catalog
// ID the service already holds, never a client's free text.

export const MAX_KEPT_BENCHMARKS = 500;

export interface BenchmarkRepo {
  /** Newest first; `modelId` narrows to one model. */
  list(filter: { modelId?: string; limit: number; offset: number }): { data: BenchmarkResult[]; hasMore: boolean };
  stagePut(record: BenchmarkResult): void;
}

export function benchmarkRepo(env: StoreEnv): BenchmarkRepo {
  const db = env.db<BenchmarkResult>('benchmarks');
  return {
    list({ modelId, limit, offset }) {
      const data: BenchmarkResult[] = [];
      let skipped = 0;
      for (const { value } of db.getRange({ reverse: true })) {
        if (modelId !== undefined && value.modelId !== modelId) continue;
        if (skipped < offset) {
          skipped++;
          continue;
        }
        if (data.length === limit) return { data, hasMore: true };
        data.push(value);
      }
      return { data, hasMore: false };
    },
    stagePut(record) {
      void db.put(record.jobId, record);
      // Inside the caller's transaction: the count includes the record just put.
      let extra = db.getCount() - MAX_KEPT_BENCHMARKS;
      for (const { key } of db.getRange()) {
        if (extra-- <= 0) break;
        void db.remove(key);
      }
    },
  };
}
