import { GAUGE_BUILT_IN_SOURCES } from '../protocol/gauge-catalog.ts';
import type { GaugeSourceRecord } from '../protocol/gauge-sources.ts';
import type { StoreEnv } from './env.ts';
import { recordRepo } from './record-repo.ts';

// Gauge's setup: the built-in sources and the accounts a person connected. The edge is the only writer; the
// gauge worker reads these records to know what to collect. Keys are source IDs, bounded before they get here
// (built-in names, `acct_` + a ULID).

export type { GaugeSourceRecord };

export interface GaugeSourceRepo {
  all(): GaugeSourceRecord[];
  get(id: string): GaugeSourceRecord | undefined;
  stagePut(record: GaugeSourceRecord): void;
  stageRemove(id: string): void;
  /** Creates any built-in source that is missing (first start, or one added by an upgrade). */
  ensureBuiltIns(now: number): Promise<void>;
}

const BUILT_IN_ORDER = new Map(GAUGE_BUILT_IN_SOURCES.map((s, i) => [s.id, i]));

/** Stable display order: built-ins as catalogued, then accounts by creation. */
export function displayOrder(a: GaugeSourceRecord, b: GaugeSourceRecord): number {
  const ia = BUILT_IN_ORDER.get(a.id) ?? Infinity;
  const ib = BUILT_IN_ORDER.get(b.id) ?? Infinity;
  if (ia !== ib) return ia - ib;
  return a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0);
}

export function gaugeSourceRepo(env: StoreEnv): GaugeSourceRepo {
  const db = env.db<GaugeSourceRecord>('gauge-sources');
  const records = recordRepo<GaugeSourceRecord>(env, 'gauge-sources', (r) => r.id);
  return {
    ...records,
    all: () => records.all().sort(displayOrder),
    async ensureBuiltIns(now) {
      if (GAUGE_BUILT_IN_SOURCES.every((s) => db.get(s.id) !== undefined)) return;
      // Checked again inside the write transaction: the edge and the gauge worker both ensure at start, and
      // one must never overwrite a source the other (or a person, through the edge) already wrote.
      await env.commit(() => {
        for (const s of GAUGE_BUILT_IN_SOURCES) {
          if (db.get(s.id) !== undefined) continue;
          db.put(s.id, {
            ...s,
            config: { ...s.config },
            builtIn: true,
            credentialRef: null,
            createdAt: now,
            updatedAt: now,
          });
        }
      });
    },
  };
}
