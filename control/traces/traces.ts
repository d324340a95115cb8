import type { Logger } from 'pino';
import type { Catalog } from '../../protocol/catalog.ts';
import type { UsageEvent } from '../../protocol/gateway.ts';
import type { StoredSettings } from '../../protocol/http/settings.ts';
import { planSpans } from './gen-ai.ts';
import { startPipelineThread, type Pipeline } from '../../workers/traces/pipeline-client.ts';

// Traces of the gateway's calls (docs/api.md, Traces): every edge thread sends the main thread each call's usage
// event already; here each becomes a plan of plain data, and the traces thread (workers/traces) makes the SDK's
// spans and exports them, off the thread that serves calls. While traces are off there is no thread and no SDK
// loaded; a call costs one null check.

export interface Traces {
  /** The spans of one settled call. */
  record(event: UsageEvent): void;
  /** Follows the `traces` setting: a changed one starts a new pipeline and flushes and stops the old one. */
  apply(settings: StoredSettings['traces']): void;
  /** Exports what is buffered now (tests, and the bench between its runs). */
  flush(): Promise<void>;
  /** Flushes and stops the pipeline, and waits for those being stopped. */
  close(): Promise<void>;
}

interface Deps {
  catalog(): Catalog;
  version: string;
  log: Logger;
}

export function createTraces({ catalog, version, log }: Deps): Traces {
  let pipeline: Pipeline | null = null;
  let applied = JSON.stringify({ enabled: false });
  // Settings applied in order, each after the SDK (loaded at the first switch-on) is there.
  let applying: Promise<void> = Promise.resolve();
  const stopping = new Set<Promise<void>>();

  const stop = (old: Pipeline | null) => {
    if (old === null) return;
    const done = old.shutdown().catch((err: unknown) => log.warn({ reason: String(err) }, 'traces did not stop'));
    stopping.add(done);
    void done.finally(() => stopping.delete(done));
  };

  async function switchTo(t: StoredSettings['traces']): Promise<void> {
    const old = pipeline;
    pipeline = null;
    if (t.enabled) {
      pipeline = startPipelineThread({ endpoint: t.endpoint, headers: { ...t.headers }, version }, log);
    }
    stop(old);
    // Never the headers: their values may be a backend's API key.
    log.info({ enabled: t.enabled, endpoint: t.endpoint }, t.enabled ? 'traces on' : 'traces off');
  }

  return {
    record(event) {
      if (pipeline === null) return;
      try {
        pipeline.emit(planSpans(event, catalog()));
      } catch (err) {
        // Bookkeeping after the answer: a span that cannot be made must not reach the call.
        log.warn({ reqId: event.requestId, reason: String(err) }, 'could not make the spans of a call');
      }
    },
    apply(t) {
      const wanted = JSON.stringify(t.enabled ? t : { enabled: false });
      if (wanted === applied) return;
      applied = wanted;
      applying = applying
        .then(() => switchTo(t))
        .catch((err: unknown) => log.warn({ reason: String(err) }, 'could not switch traces'));
    },
    async flush() {
      await applying;
      await pipeline?.flush();
    },
    async close() {
      await applying;
      stop(pipeline);
      pipeline = null;
      await Promise.all(stopping);
    },
  };
}
