import type { Worker } from 'node:worker_threads';
import type { UsageEvent } from '../../protocol/gateway.ts';
import { openStoreEnv, type StoreEnv } from '../../store/env.ts';
import { usageRepo, type UsageRepo } from '../../store/usage-repo.ts';
import { createMeter, type Meter, type MeterOptions } from '../../workers/meter/actor.ts';
import { captureLog, tempDataDir } from './usage.ts';

// The real meter worker on a temporary data directory, read back through the repository as the routes do: each
// harness one service start (its own run of the usage journal).

export const ALL = { from: '2000-01-01', to: '2100-01-01' };

export interface Harness {
  dir: string;
  env: StoreEnv;
  repo: UsageRepo;
  meter: Meter;
  lines: Record<string, unknown>[];
  /** The worker the meter runs on now. */
  current(): Worker;
  /** Resolves with the next worker the meter starts. */
  nextWorker(): Promise<Worker>;
  done(): Promise<void>;
}

let runs = 0;

/** A meter on `dir`, as one service start: each its own run of the usage journal. */
export function harness(dirs: string[], over: Partial<MeterOptions> = {}, dir = tempDataDir(dirs)): Harness {
  const env = openStoreEnv(dir);
  const { log, lines } = captureLog();
  const waiting: ((w: Worker) => void)[] = [];
  let current: Worker | undefined;
  const meter = createMeter({
    dataDir: dir,
    run: `run${++runs}`,
    enabled: () => true,
    retentionDays: () => 400,
    log,
    onWorker(w) {
      current = w;
      for (const resolve of waiting.splice(0)) resolve(w);
    },
    ...over,
  });
  return {
    dir,
    env,
    repo: usageRepo(env),
    meter,
    lines,
    current: () => current!,
    nextWorker: () => new Promise((resolve) => waiting.push(resolve)),
    async done() {
      await meter.close();
      await env.close();
    },
  };
}

/** The meter's restart timer does not hold the process open (a service has its listener for that). */
export async function held<T>(p: Promise<T>): Promise<T> {
  const keep = setInterval(() => undefined, 1000);
  try {
    return await p;
  } finally {
    clearInterval(keep);
  }
}

export function recordAll(meter: Meter, events: UsageEvent[]): void {
  for (const e of events) meter.record(e);
}
