// Recent time to first byte per catalog model, as the relay observed it (request start to the answer's
// head). An exponentially weighted mean so one slow answer moves the estimate without owning it.

export interface LatencyTracker {
  observe(modelId: string, ttfbMs: number): void;
  /** The estimate in milliseconds, or null before the first observation. */
  read(modelId: string): number | null;
}

const ALPHA = 0.3;

export function createLatencyTracker(): LatencyTracker {
  const estimates = new Map<string, number>();
  return {
    observe(modelId, ttfbMs) {
      const prior = estimates.get(modelId);
      estimates.set(modelId, prior === undefined ? ttfbMs : prior + ALPHA * (ttfbMs - prior));
    },
    read: (modelId) => estimates.get(modelId) ?? null,
  };
}
