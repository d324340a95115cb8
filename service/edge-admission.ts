import type { Logger } from 'pino';
import type { ModelPricing } from '../protocol/http/catalog.ts';
import type { ActiveLimit, AdmissionSource } from '../protocol/ports/limits.ts';
import { createLimitGate } from '../state/limit-gate.ts';
import { createLedger } from '../state/limit-ledger.ts';
import { followLimitJournal } from '../store/limit-journal.ts';
import { type EdgeAdmission, type EdgeReport, type GaugeShare, shareKey } from './edge-feed.ts';

// Enforced limits on an edge thread (docs/api.md, "Edge threads"): each thread admits and settles its own calls
// against the shared ledger, so nothing is handed to the control thread under limits. What admission reads
// besides the ledger comes from the control thread (edge-admission-feed.ts). The thread journals its own
// settlements into the shared journal generation and reports the slots it claims and the counters it refuses on.

export interface EdgeAdmissionSource {
  source: AdmissionSource;
  priceOf(modelId: string): ModelPricing | null;
  /** Whether calls go to the control thread whole (EdgeAdmission.handOver). */
  handsOver(): boolean;
  apply(next: EdgeAdmission): void;
  close(): void;
}

/** An edge thread's side: admission against the shared ledger, with what the control thread last sent. */
export function edgeAdmissionSource(opts: {
  ledger: SharedArrayBuffer;
  gate: SharedArrayBuffer;
  journalDir: string;
  report(r: EdgeReport): void;
  log: Logger;
}): EdgeAdmissionSource {
  const gate = createLimitGate(opts.gate);
  const ledger = createLedger(opts.ledger, (slot, limitId, scopeKey) => {
    gate.claimed();
    opts.report({ t: 'claim', slot, limitId, scopeKey });
  });
  const journal = followLimitJournal(opts.journalDir, gate, ledger.nameOf, (err) =>
    opts.log.warn({ err: String(err).slice(0, 300) }, 'could not write the limit journal'),
  );
  let limits: readonly ActiveLimit[] = [];
  let handOver = false;
  let prices = new Map<string, ModelPricing>();
  let gauge = new Map<string, GaugeShare | null>();
  return {
    source: {
      active: () => limits,
      ledger,
      now: Date.now,
      gaugeShare: (accountId, windowId) => gauge.get(shareKey(accountId, windowId)) ?? null,
      settled: journal.append,
      journal: journal.flush,
      enter: gate.enter,
      exit: gate.exit,
      tripped: (record, key, windowStart, resetsAt) =>
        opts.report({ t: 'tripped', limitId: record.id, key, windowStart, resetsAt }),
    },
    priceOf: (modelId) => prices.get(modelId) ?? null,
    handsOver: () => handOver,
    apply(next) {
      limits = next.limits;
      handOver = next.handOver;
      prices = new Map(next.prices);
      gauge = new Map(next.gauge);
    },
    close: journal.close,
  };
}
