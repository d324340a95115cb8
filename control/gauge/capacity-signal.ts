import type { GaugeActor } from '../../workers/gauge/actor.ts';
import { LIVE_HEADERS_ACCOUNT_PREFIX } from '../../protocol/gauge-catalog.ts';
import type { StoredReading } from '../../store/gauge-data-repo.ts';
import type { GaugeSourceRecord } from '../../store/gauge-source-repo.ts';
import type { CapacityReading, CapacitySignal, CapacityTracker } from '../capacity.ts';
import type { Catalog } from '../../protocol/catalog-entries.ts';
import { isAccount } from '../../protocol/gauge-sources.ts';
import {
  LOW_HEADROOM,
  STALE_MS,
  statusOf,
  tightest,
  UNDATED_MS,
  type CapacityRow,
  type CapacityStatus,
  type Tightest,
} from '../../protocol/gauge-capacity.ts';

// The one capacity signal: the live-header tracker (per catalog model, from answer heads and 429s) and Gauge's
// polled readings (per account: the tightest window still counting). GET /v1/gauge/capacity lists it;
// Smart Route's `capacity` strategy reads it per model through `read`.
//
// Mapping: a Gauge account of provider P speaks for the catalog models whose provider record is of kind P (an
// `openrouter` account for the models of every `openrouter` provider record). Gauge cannot tell which key a
// provider record holds, so with several accounts of P the one with the most headroom speaks: Smart Route steers
// away only when every such account is short. Live-header readings stay per model (rate limits are per model);
// when both exist the tighter wins, since each caps what is left (a request window and a spend limit are
// different limits). A window whose reset time passed no longer counts; one without a reset time counts for
// UNDATED_MS after its reading, and a reading older than STALE_MS counts for nothing.

export { LOW_HEADROOM, STALE_MS, UNDATED_MS };
/** Polled readings are reread from the store at most this often on the request path (and after a refresh). */
const CACHE_MS = 1_000;

export { statusOf, tightest, type CapacityRow, type CapacityStatus, type Tightest };

export interface CapacitySignalDeps {
  live: CapacityTracker;
  readings(): StoredReading[];
  sources(): GaugeSourceRecord[];
  catalog(): Catalog;
  /** Gauge opted in: polled readings count only then; the live tracker always does. */
  enabled(): boolean;
}

export interface GaugeCapacitySignal extends CapacitySignal {
  /** GET /v1/gauge/capacity: active accounts (enabled, with a reading), then live per-model readings. */
  rows(now?: number): CapacityRow[];
  /** The polled account that speaks for a provider kind now, or null when none counts. */
  polled(providerKind: string, now?: number): { accountId: string; tight: Tightest } | null;
  /** Forget cached readings (after an explicit refresh wrote new ones). */
  invalidate(): void;
}

interface Active {
  record: GaugeSourceRecord;
  stored: StoredReading;
}

// Its one state is the cache of the enabled accounts' readings (CACHE_MS), read on every routed call.
export function createCapacitySignal(deps: CapacitySignalDeps): GaugeCapacitySignal {
  let cache: { at: number; active: Active[] } | null = null;
  return { read, rows, polled, invalidate: () => void (cache = null) };

  /** Enabled accounts' latest readings, live-header accounts included (the route lists them). */
  function active(now: number): Active[] {
    if (cache !== null && now >= cache.at && now - cache.at < CACHE_MS) return cache.active;
    const byId = new Map(deps.sources().map((s) => [s.id, s]));
    const list: Active[] = [];
    for (const stored of deps.readings()) {
      const record = byId.get(stored.sourceId);
      if (!record?.enabled) continue;
      if (isAccount(record) || record.kind === 'live_headers') list.push({ record, stored });
    }
    cache = { at: now, active: list };
    return list;
  }

  function polled(kind: string, now = Date.now()) {
    let best: { accountId: string; tight: Tightest } | null = null;
    let any = false;
    for (const { record, stored } of active(now)) {
      if (!isAccount(record) || stored.reading.providerId !== kind) continue;
      any = true;
      const tight = tightest(stored.reading, now);
      // An account with nothing counting is no evidence of pressure: it may be the one the route's key is.
      if (tight === null) return null;
      if (best === null || tight.headroom > best.tight.headroom) best = { accountId: stored.reading.accountId, tight };
    }
    return any ? best : null;
  }

  function read(modelId: string, now = Date.now()): CapacityReading | null {
    const live = deps.live.read(modelId, now);
    if (!deps.enabled()) return live;
    const catalog = deps.catalog();
    const model = catalog.get(modelId);
    const kind = model && catalog.provider(model.providerId)?.kind;
    const p = kind === undefined ? null : polled(kind, now);
    if (p === null) return live;
    const fromGauge: CapacityReading = {
      headroom: p.tight.headroom,
      remaining: p.tight.remaining,
      limit: p.tight.limit,
      resetAt: p.tight.countsUntil,
      source: 'gauge',
      observedAt: now,
    };
    return live !== null && live.headroom <= fromGauge.headroom ? live : fromGauge;
  }

  function rows(now = Date.now()): CapacityRow[] {
    if (!deps.enabled()) return [];
    const catalog = deps.catalog();
    const entries = deps.live.entries(now).map((e) => {
      const model = catalog.get(e.modelId);
      const provider = model ? catalog.provider(model.providerId) : undefined;
      return { ...e, providerRecordId: provider?.id ?? null, kind: provider?.kind ?? null };
    });
    const out: CapacityRow[] = active(now).map(({ stored: { reading } }) => {
      const tight = tightest(reading, now);
      const live = reading.accountId.startsWith(LIVE_HEADERS_ACCOUNT_PREFIX);
      const record = reading.accountId.slice(LIVE_HEADERS_ACCOUNT_PREFIX.length);
      const mine = entries.filter((e) => (live ? e.providerRecordId === record : e.kind === reading.providerId));
      return {
        providerId: reading.providerId,
        accountId: reading.accountId,
        model: null,
        headroom: tight?.headroom ?? null,
        resetsAt: tight?.resetsAt == null ? null : new Date(tight.resetsAt).toISOString(),
        status: statusOf(tight?.headroom ?? null),
        recentRateLimitedShare: rateLimitedShare(mine),
        source: reading.source,
        observedAt: reading.collectedAt,
      };
    });
    for (const e of entries)
      if (e.providerRecordId !== null && e.kind !== null) out.push(liveRow(e, e.providerRecordId, e.kind));
    return out;
  }
}

type LiveEntry = ReturnType<CapacityTracker['entries']>[number];

/** The share of answers that were 429s, of the calls the live headers heard; null when they heard none. */
function rateLimitedShare(of: readonly Pick<LiveEntry, 'answers' | 'rateLimited'>[]): number | null {
  const heard = of.reduce((n, e) => n + e.answers + e.rateLimited, 0);
  return heard === 0 ? null : of.reduce((n, e) => n + e.rateLimited, 0) / heard;
}

/** One model's row from the headers of its provider's answers. */
function liveRow(e: LiveEntry, providerRecordId: string, kind: string): CapacityRow {
  const r = e.reading;
  return {
    providerId: kind,
    accountId: LIVE_HEADERS_ACCOUNT_PREFIX + providerRecordId,
    model: e.modelId,
    headroom: r?.headroom ?? null,
    resetsAt: r === null ? null : new Date(r.resetAt).toISOString(),
    status: statusOf(r?.headroom ?? null, r?.source === 'rate_limited'),
    recentRateLimitedShare: rateLimitedShare([e]),
    source: 'live_headers',
    observedAt: new Date(Math.max(r?.observedAt ?? 0, e.lastAt ?? 0)).toISOString(),
  };
}

/** The gauge actor as the edge's Gauge service uses it, with the signal's cache dropped after each explicit refresh. */
export function refreshingCapacity(
  actor: Pick<GaugeActor, 'setupChanged' | 'refresh'>,
  signal: () => Pick<GaugeCapacitySignal, 'invalidate'>,
): Pick<GaugeActor, 'setupChanged' | 'refresh'> {
  return {
    setupChanged: () => actor.setupChanged(),
    async refresh(sourceIds) {
      const outcomes = await actor.refresh(sourceIds);
      signal().invalidate();
      return outcomes;
    },
  };
}
