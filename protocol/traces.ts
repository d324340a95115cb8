// The spans of one gateway call as plain data (control/traces/gen-ai.ts makes them from its usage event), and the
// messages of the traces thread (workers/traces), which alone loads the OpenTelemetry SDK and exports them.

export type SpanValue = string | number;

export interface SpanPlan {
  /** `{gen_ai.operation.name} {gen_ai.request.model}`, the operation alone when no model is known. */
  name: string;
  /** Models in the service's own process (the embedded runtime) are INTERNAL, as the conventions allow. */
  kind: 'client' | 'internal';
  startTime: number;
  endTime: number;
  attributes: Record<string, SpanValue>;
  /** Also `error.type` in `attributes`; the span's status is ERROR when set. */
  error: string | null;
  /** A route pack's attempts, when the first did not answer. */
  children: SpanPlan[];
}

/** What the traces thread is started with (its `workerData`): never logged, since headers may hold an API key. */
export interface TracesThreadData {
  endpoint: string | null;
  headers: Record<string, string>;
  version: string;
}

export type ToTraces =
  | { t: 'spans'; plans: SpanPlan[] }
  | { t: 'flush'; id: number }
  /** Flushes, stops the exporter and answers; the thread then ends. */
  | { t: 'shutdown'; id: number };

export type FromTraces = { t: 'done'; id: number } | { t: 'warn'; fields: Record<string, unknown>; message: string };
