import { ROOT_CONTEXT, SpanKind, SpanStatusCode, trace, type Tracer } from '@opentelemetry/api';
import { ExportResultCode, type ExportResult } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import { BasicTracerProvider, BatchSpanProcessor, type SpanExporter } from '@opentelemetry/sdk-trace-base';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_VERSION } from '@opentelemetry/semantic-conventions';
import { redactSecrets } from '../../protocol/redact.ts';
import type { SpanPlan } from '../../protocol/traces.ts';

/** Where the pipeline's warnings go: the traces thread posts them to the service's log. */
export interface WarnLog {
  warn(fields: Record<string, unknown>, message: string): void;
}

// The only file that loads the OpenTelemetry SDK, on the traces thread (worker.ts): a
// provider of its own, never registered as the process's global one, a batching processor and the OTLP/HTTP
// exporter, which sends JSON. Spans get explicit start and end times, so they can be made after the call.

export interface Pipeline {
  emit(plan: SpanPlan): void;
  /** Exports what the processor holds now. */
  flush(): Promise<void>;
  /** Flushes, then stops the exporter; the pipeline takes no more spans. */
  shutdown(): Promise<void>;
}

export interface PipelineOptions {
  /** Null: the exporter's default (OTEL_EXPORTER_OTLP_TRACES_ENDPOINT, else localhost:4318). */
  endpoint: string | null;
  headers: Record<string, string>;
  version: string;
  log: WarnLog;
}

// A collector that does not answer within this loses its batch instead of holding the service's stop.
const EXPORT_TIMEOUT_MS = 5000;
// One warning a minute at most while the collector keeps failing: a trace backend being down is not news per batch.
const WARN_EVERY_MS = 60_000;

export function startPipeline({ endpoint, headers, version, log }: PipelineOptions): Pipeline {
  const exporter = warnOnFailure(
    new OTLPTraceExporter({ ...(endpoint !== null && { url: endpoint }), headers, timeoutMillis: EXPORT_TIMEOUT_MS }),
    Object.values(headers),
    log,
  );
  // Batch size, queue and delay are the SDK's defaults, or the OTEL_BSP_* variables where set.
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ [ATTR_SERVICE_NAME]: 'switchyard', [ATTR_SERVICE_VERSION]: version }),
    spanProcessors: [new BatchSpanProcessor(exporter)],
  });
  const tracer = provider.getTracer('switchyard', version);
  return {
    emit: (plan) => emit(tracer, plan, null),
    flush: () => provider.forceFlush(),
    shutdown: () => provider.shutdown(),
  };
}

function emit(tracer: Tracer, plan: SpanPlan, parent: ReturnType<Tracer['startSpan']> | null): void {
  const span = tracer.startSpan(
    plan.name,
    {
      kind: plan.kind === 'internal' ? SpanKind.INTERNAL : SpanKind.CLIENT,
      startTime: plan.startTime,
      attributes: plan.attributes,
    },
    parent === null ? ROOT_CONTEXT : trace.setSpan(ROOT_CONTEXT, parent),
  );
  if (plan.error !== null) span.setStatus({ code: SpanStatusCode.ERROR });
  for (const child of plan.children) emit(tracer, child, span);
  span.end(plan.endTime);
}

/** The exporter, with a warning (the reason only, redacted: never a header) when a batch could not be sent. */
function warnOnFailure(exporter: SpanExporter, secrets: readonly string[], log: WarnLog): SpanExporter {
  let warnedAt = Number.NEGATIVE_INFINITY;
  return {
    export(spans, done) {
      exporter.export(spans, (result: ExportResult) => {
        if (result.code !== ExportResultCode.SUCCESS && Date.now() - warnedAt >= WARN_EVERY_MS) {
          warnedAt = Date.now();
          let reason = redactSecrets(result.error?.message ?? 'unknown');
          for (const secret of secrets) reason = reason.replaceAll(secret, '[redacted]');
          log.warn(
            { spans: spans.length, reason: reason.slice(0, 200) },
            'could not export traces; the batch is dropped',
          );
        }
        done(result);
      });
    },
    shutdown: () => exporter.shutdown(),
    forceFlush: () => exporter.forceFlush?.() ?? Promise.resolve(),
  };
}
