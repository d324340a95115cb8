import { EDGE_PROVIDERS_METHODS, type EdgeProvidersPort } from '../protocol/ports/providers.ts';
import type { SmartRoutingPort } from '../protocol/ports/smart-route.ts';
import type { PortClient } from '../workers/shared/port-channel.ts';
import type { EdgeReport } from './edge-feed.ts';

// Small pieces of an edge thread (edge-worker.ts), apart so that they can be tested without starting one.

/** Thrown inside a gateway route on an edge thread when the call is the control thread's to serve. */
export const FORWARD_TO_CONTROL: unique symbol = Symbol('forward to the control thread');

export interface ReportBatcher {
  add(report: EdgeReport): void;
  /** Posts what is waiting now (the thread is stopping). */
  flush(): void;
}

/** Reports leave in one message per event-loop turn: a busy thread's usage events and log lines travel together. */
export function reportBatcher(post: (batch: EdgeReport[]) => void): ReportBatcher {
  let batch: EdgeReport[] | null = null;
  const flush = () => {
    if (batch === null) return;
    const sent = batch;
    batch = null;
    post(sent);
  };
  return {
    add(report) {
      if (batch === null) {
        batch = [];
        setImmediate(flush);
      }
      batch.push(report);
    },
    flush,
  };
}

/**
 * Presets and route packs as an edge thread reaches them: their resolution is a call to the control thread
 * (one per `@preset/` or `@route/` call), and the signals the gateway feeds go with the thread's reports.
 */
export function edgeSmartRouting(calls: PortClient, reports: ReportBatcher): SmartRoutingPort {
  return {
    presets: calls.remote<SmartRoutingPort['presets']>('smart.presets', ['usable']),
    packs: calls.remote<SmartRoutingPort['packs']>('smart.packs', ['usable', 'decide']),
    capacity: {
      observeHeaders(modelId, headers) {
        const limits = rateLimitHeaders(headers);
        if (limits !== null) reports.add({ t: 'headers', modelId, headers: limits });
      },
      observeRateLimited: (modelId, retryAfterSeconds) => reports.add({ t: 'rateLimited', modelId, retryAfterSeconds }),
    },
    latency: {
      observe: (modelId, ms) => reports.add({ t: 'latency', modelId, ms }),
    },
  };
}

/** The providers port as an edge thread reaches it: a refused key is set aside on the control thread. */
export function edgeProviders(calls: PortClient): EdgeProvidersPort {
  return calls.remote<EdgeProvidersPort>('providers', EDGE_PROVIDERS_METHODS);
}

/**
 * The answer head's headers that Smart Route's capacity tracker and Gauge's live-headers source read (their
 * rate-limit headers and retry-after); null when it has none, as most heads have, and nothing is sent.
 */
export function rateLimitHeaders(headers: Readonly<Record<string, string>>): Record<string, string> | null {
  let kept: Record<string, string> | null = null;
  for (const name in headers) {
    if (name === 'retry-after' || name.includes('ratelimit')) (kept ??= {})[name] = headers[name]!;
  }
  return kept;
}
