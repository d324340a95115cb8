import { availableParallelism } from 'node:os';
import { Piscina } from 'piscina';
import { ServiceError } from '../../protocol/errors.ts';
import type { ModelsListResult, ProviderTarget, ProxyResult, ProxyTask } from '../../protocol/messages.ts';
import type { UpstreamModelList } from '../../protocol/providers.ts';
import type { ProxyWorkerData } from './worker.ts';

export interface ProxyPool {
  listModels(target: ProviderTarget, credentialRef: string | null): Promise<UpstreamModelList>;
  /** For GET /metrics: tasks waiting for a thread, threads now, and piscina's utilization (0 to 1). */
  stats(): { queued: number; threads: number; utilization: number };
  close(): Promise<void>;
}

export function createProxyPool(options: { dataDir: string; threads?: number; maxQueue?: number }): ProxyPool {
  const threads = options.threads ?? Math.max(1, availableParallelism());
  const workerData: ProxyWorkerData = { dataDir: options.dataDir };
  const pool = new Piscina({
    filename: new URL('./entry.js', import.meta.url).href,
    minThreads: 0,
    maxThreads: threads,
    maxQueue: options.maxQueue ?? threads * 256,
    idleTimeout: 60_000,
    workerData,
  });

  async function run(task: ProxyTask): Promise<ProxyResult> {
    try {
      return (await pool.run(task)) as ProxyResult;
    } catch (err) {
      // A full queue is an answer with a code, not a hang.
      if (err instanceof Error && /queue is at limit/i.test(err.message)) {
        throw new ServiceError('OVERLOADED', 'The service is busy; retry shortly.', {
          headers: { 'retry-after': '1' },
        });
      }
      throw err;
    }
  }

  return {
    async listModels(target, credentialRef) {
      const result = (await run({ kind: 'models.list', target, credentialRef })) as ModelsListResult;
      if (!result.ok) throw ServiceError.fromPayload(result.error);
      return {
        models: result.models,
        withheld: result.withheld,
        ...(result.slots !== undefined && { slots: result.slots }),
      };
    },
    stats: () => ({ queued: pool.queueSize, threads: pool.threads.length, utilization: pool.utilization }),
    close: () => pool.destroy(),
  };
}
