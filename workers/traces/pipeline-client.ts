import { Worker } from 'node:worker_threads';
import type { FromTraces, SpanPlan, ToTraces, TracesThreadData } from '../../protocol/traces.ts';
import type { WarnLog } from './otlp-pipeline.ts';

// The service's side of the traces thread (worker.ts): plans of one event-loop turn go in one message, so that a
// call costs its plan and a push here; flush and shutdown wait for the thread's answer.

export interface Pipeline {
  emit(plan: SpanPlan): void;
  /** Exports what the thread holds now. */
  flush(): Promise<void>;
  /** Flushes, then stops the exporter and the thread; the pipeline takes no more spans. */
  shutdown(): Promise<void>;
}

/** A thread that does not answer a flush or shutdown within this is left (and terminated at shutdown). */
const ANSWER_WAIT_MS = 10_000;

export function startPipelineThread(data: TracesThreadData, log: WarnLog): Pipeline {
  const worker = new Worker(new URL('./entry.js', import.meta.url), { workerData: data });
  // The thread must not hold the process open; its exports do not outlive the service.
  worker.unref();
  const waiters = new Map<number, () => void>();
  let nextId = 1;
  let pending: SpanPlan[] = [];
  let stopped = false;
  worker.on('message', (m: FromTraces) => {
    if (m.t === 'warn') log.warn(m.fields, m.message);
    else {
      waiters.get(m.id)?.();
      waiters.delete(m.id);
    }
  });
  worker.on('error', (err) => log.warn({ reason: String(err).slice(0, 300) }, 'the traces thread failed'));
  worker.on('exit', () => {
    stopped = true;
    for (const settle of waiters.values()) settle();
    waiters.clear();
  });
  const send = () => {
    const plans = pending;
    pending = [];
    if (!stopped && plans.length > 0) worker.postMessage({ t: 'spans', plans } satisfies ToTraces);
  };
  const ask = (t: 'flush' | 'shutdown'): Promise<void> => {
    send();
    if (stopped) return Promise.resolve();
    const id = nextId++;
    return new Promise<void>((resolve) => {
      const timer = setTimeout(() => {
        waiters.delete(id);
        resolve();
      }, ANSWER_WAIT_MS);
      timer.unref();
      waiters.set(id, () => (clearTimeout(timer), resolve()));
      worker.postMessage({ t, id } satisfies ToTraces);
    });
  };
  return {
    emit(plan) {
      if (stopped) return;
      if (pending.length === 0) setImmediate(send);
      pending.push(plan);
    },
    flush: () => ask('flush'),
    async shutdown() {
      await ask('shutdown');
      stopped = true;
      await worker.terminate();
    },
  };
}
