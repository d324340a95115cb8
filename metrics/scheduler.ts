import type { Registry } from './registry.ts';

// The local-model scheduler's series (docs/api.md, Metrics; Local-model scheduler). Labels from fixed sets
// only: the runtime (`embedded`, `llamacpp`) and the eviction's reason. Model IDs are left out, as for the
// gateway's series: GET /v1/runtime/residency answers per model.

/** Queue waits: a load that waited at all waited for a keep-alive to end, seconds to minutes. */
const WAIT_BUCKETS = [0.01, 0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];

export function createSchedulerMetrics(registry: Registry) {
  const loads = registry.counter(
    'switchyard_model_loads_total',
    'Local models loaded into the memory budget, by runtime.',
    ['runtime'],
  );
  const evictions = registry.counter(
    'switchyard_model_evictions_total',
    'Cold local models evicted to make room for a load, by runtime and reason.',
    ['runtime', 'reason'],
  );
  const wait = registry.histogram(
    'switchyard_model_load_queue_wait_seconds',
    'How long a load waited in the queue for memory, for loads that waited.',
    [],
    WAIT_BUCKETS,
  );
  const held = registry.gauge('switchyard_model_memory_held_bytes', 'Bytes the local models hold of the budget.');
  const budget = registry.gauge('switchyard_model_memory_budget_bytes', 'The memory budget of the local models.');
  const queued = registry.gauge('switchyard_model_load_queue_length', 'Loads waiting for memory now.');
  let read: (() => { budgetBytes: number; heldBytes: number; queued: number }) | null = null;
  registry.onCollect(() => {
    if (read === null) return;
    const m = read();
    budget.labels().set(m.budgetBytes);
    held.labels().set(m.heldBytes);
    queued.labels().set(m.queued);
  });
  return {
    loaded: (runtime: 'embedded' | 'llamacpp') => loads.labels(runtime).inc(),
    evicted: (runtime: 'embedded' | 'llamacpp', reason: string) => evictions.labels(runtime, reason).inc(),
    queueWaitMs: (ms: number) => wait.labels().observe(ms / 1000),
    /** The scheduler's figures, read at each scrape. */
    reads(memory: () => { budgetBytes: number; heldBytes: number; queued: number }): void {
      read = memory;
    },
  };
}

export type SchedulerMetrics = ReturnType<typeof createSchedulerMetrics>;
