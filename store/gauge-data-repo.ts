import { createHash, randomBytes } from 'node:crypto';
import type { GaugeActivityBucket, GaugeProviderStatus, GaugeReading } from '../protocol/gauge.ts';
import type { GaugeSourceState } from '../protocol/gauge-messages.ts';
import type { Database } from 'lmdb';
import type { StoreEnv } from './env.ts';
import { boundedKey } from './keys.ts';

// What Gauge collected: the latest reading per account, hourly history snapshots, per-source collection state
// (diagnostics and the collector's cursor), provider statuses and activity buckets. The gauge worker writes
// them; the edge reads them for its routes and removes a source's share when a person deletes it or its history.
// Every key part is bounded before it gets here: source IDs (<= 160), account IDs (a source ID, or
// `live-headers.` + a provider record ID), ISO hours, and a hash for activity dimensions.

export interface StoredReading {
  sourceId: string;
  reading: GaugeReading;
}

export interface StoredSourceState {
  state: GaugeSourceState;
  /** The collector's own cursor (file offsets, seen IDs), handed back on its next run. */
  cursor: unknown;
  /** The provider-side identity the collector reported, hashed; never the identity itself. */
  identityHash: string | null;
}

export interface HistoryRow {
  sourceId: string;
  hour: string;
  accountId: string;
  reading: GaugeReading;
}

export interface GaugeDataRepo {
  reading(accountId: string): StoredReading | undefined;
  readings(): StoredReading[];
  /** The latest reading for its account, and the account's snapshot for the reading's hour. */
  stageReading(sourceId: string, reading: GaugeReading): void;
  history(sinceMs: number, sourceIds: readonly string[]): Generator<HistoryRow>;
  /**
   * Removes history (of one source, or all); returns how many snapshots. Current readings stay. `alongside`
   * stages more writes (the audit record) in the same transaction.
   */
  removeHistory(sourceId: string | null, alongside?: (removed: number) => void): Promise<number>;
  /** Removes history snapshots and activity buckets older than `beforeMs`; returns how many rows. */
  prune(beforeMs: number): Promise<number>;
  state(sourceId: string): StoredSourceState | undefined;
  stageState(sourceId: string, value: StoredSourceState): void;
  statuses(): GaugeProviderStatus[];
  stageStatus(status: GaugeProviderStatus): void;
  stageActivity(buckets: readonly GaugeActivityBucket[]): void;
  activityCount(): number;
  /** Everything Gauge collected for a deleted source: readings, history, state, activity. */
  removeSource(sourceId: string, alongside?: () => void): Promise<void>;
  /**
   * One account's latest reading and hourly history, found now; the returned function stages their removal in
   * the caller's transaction (a deleted provider's live-header account goes with the provider).
   */
  prepareRemoveAccount(sourceId: string, accountId: string): () => void;
  /** Rewrites keys of the first layout into this one; returns how many. Run once at start. */
  upgradeKeys(): Promise<number>;
  /** This installation's salt for hashing provider-side identities; created on first use. */
  identitySalt(): Promise<string>;
}

// Printable: lmdb-js (ordered-binary) reads a longer string key holding a byte below 0x1b back as an array
// of parts and encodes its range bounds differently, so a history range over a 31-character account ID found
// nothing. The parts a key joins are service-made IDs and ISO hours, none containing `|`, except an account ID
// derived from a person's provider ID: that part is percent-encoded (keyPart).
const SEP = '|';
/** The separator of the layout before: found only in keys that upgradeKeys() rewrites. */
const LEGACY_SEP = '\u0000';
// A fact about the installation, beside the others in `meta`.
const SALT_KEY = 'gaugeIdentitySalt';
const END = '\uffff';

/** The ISO instant of the start of the hour containing `ms`. */
export function hourOf(ms: number): string {
  return new Date(Math.floor(ms / 3_600_000) * 3_600_000).toISOString();
}

const keyPart = (id: string) => boundedKey(encodeURIComponent(id));

function historyKey(sourceId: string, reading: GaugeReading): string {
  return `${sourceId}${SEP}${hourOf(Date.parse(reading.collectedAt))}${SEP}${keyPart(reading.accountId)}`;
}

function activityKey(b: GaugeActivityBucket): string {
  const dims = createHash('sha256')
    .update(JSON.stringify([b.providerId, b.model, b.project, b.workspace, b.session]))
    .digest('base64url')
    .slice(0, 22);
  return `${b.hour}${SEP}${keyPart(b.sourceId)}${SEP}${dims}`;
}

const COUNTERS = [
  'requests',
  'inputTokens',
  'outputTokens',
  'cacheReadTokens',
  'cacheWriteTokens',
  'reasoningTokens',
] as const;

export function gaugeDataRepo(env: StoreEnv): GaugeDataRepo {
  const readings = env.db<StoredReading>('gauge-readings');
  const history = env.db<GaugeReading>('gauge-history');
  const states = env.db<StoredSourceState>('gauge-state');
  const statuses = env.db<GaugeProviderStatus>('gauge-statuses');
  const activity = env.db<GaugeActivityBucket>('gauge-activity');
  const meta = env.db<string>('meta');

  function historyKeys(sourceId: string | null): string[] {
    const range =
      sourceId === null ? {} : { start: `${keyPart(sourceId)}${SEP}`, end: `${keyPart(sourceId)}${SEP}${END}` };
    return [...history.getKeys(range)];
  }

  return {
    reading: (accountId) => readings.get(accountId),
    readings: () => [...readings.getRange().map(({ value }) => value)],
    stageReading(sourceId, reading) {
      readings.put(reading.accountId, { sourceId, reading });
      // One snapshot per account and hour: the last reading of the hour wins.
      history.put(historyKey(keyPart(sourceId), reading), reading);
    },
    *history(sinceMs, sourceIds) {
      const since = hourOf(sinceMs);
      for (const sourceId of sourceIds) {
        const part = keyPart(sourceId);
        for (const { value } of history.getRange({ start: `${part}${SEP}${since}`, end: `${part}${SEP}${END}` })) {
          yield { sourceId, hour: hourOf(Date.parse(value.collectedAt)), accountId: value.accountId, reading: value };
        }
      }
    },
    async removeHistory(sourceId, alongside) {
      const keys = historyKeys(sourceId);
      await env.commit(() => {
        keys.forEach((k) => history.remove(k));
        alongside?.(keys.length);
      });
      return keys.length;
    },
    async prune(beforeMs) {
      const before = hourOf(beforeMs);
      const old = [...history.getRange()]
        .filter(({ value }) => hourOf(Date.parse(value.collectedAt)) < before)
        .map(({ key }) => key);
      const oldActivity = [...activity.getKeys({ end: before })];
      if (old.length + oldActivity.length > 0) {
        await env.commit(() => {
          old.forEach((k) => history.remove(k));
          oldActivity.forEach((k) => activity.remove(k));
        });
      }
      return old.length + oldActivity.length;
    },
    state: (sourceId) => states.get(sourceId),
    stageState: (sourceId, value) => void states.put(sourceId, value),
    statuses: () => [...statuses.getRange().map(({ value }) => value)],
    stageStatus: (status) => void statuses.put(status.providerId, status),
    stageActivity(buckets) {
      // Collectors report what they read since their cursor, so buckets add to what is stored.
      for (const b of buckets) {
        const key = activityKey(b);
        const prev = activity.get(key);
        if (!prev) activity.put(key, b);
        else {
          const next = { ...prev };
          for (const c of COUNTERS) next[c] = prev[c] + b[c];
          activity.put(key, next);
        }
      }
    },
    activityCount: () => activity.getCount(),
    async removeSource(sourceId, alongside) {
      const own = readings
        .getRange()
        .filter(({ value }) => value.sourceId === sourceId)
        .map(({ key }) => key);
      const ownReadings = [...own];
      const ownHistory = historyKeys(sourceId);
      const ownActivity = [
        ...activity
          .getRange()
          .filter(({ value }) => value.sourceId === sourceId)
          .map(({ key }) => key),
      ];
      await env.commit(() => {
        ownReadings.forEach((k) => readings.remove(k));
        ownHistory.forEach((k) => history.remove(k));
        ownActivity.forEach((k) => activity.remove(k));
        states.remove(sourceId);
        alongside?.();
      });
    },
    prepareRemoveAccount(sourceId, accountId) {
      const own = readings.get(accountId)?.sourceId === sourceId;
      const ownHistory = historyKeys(sourceId).filter((k) => history.get(k)?.accountId === accountId);
      return () => {
        if (own) readings.remove(accountId);
        ownHistory.forEach((k) => history.remove(k));
      };
    },
    upgradeKeys: () => upgradeKeys(env, history, activity),
    async identitySalt() {
      const existing = meta.get(SALT_KEY);
      if (existing !== undefined) return existing;
      await env.commit(() => {
        if (meta.get(SALT_KEY) === undefined) meta.put(SALT_KEY, randomBytes(32).toString('base64url'));
      });
      return meta.get(SALT_KEY)!;
    },
  };
}

/** Rewrites the history and activity keys of the first layout into this one; returns how many. */
async function upgradeKeys(
  env: StoreEnv,
  history: Database<GaugeReading, string>,
  activity: Database<GaugeActivityBucket, string>,
): Promise<number> {
  // History and activity keys of the first layout (LEGACY_SEP); their values carry everything a key holds.
  const legacy = (key: unknown) => typeof key !== 'string' || key.includes(LEGACY_SEP);
  const oldHistory = [...history.getRange()].filter(({ key }) => legacy(key));
  const oldActivity = [...activity.getRange()].filter(({ key }) => legacy(key));
  if (oldHistory.length + oldActivity.length === 0) return 0;
  await env.commit(() => {
    for (const { key, value } of oldHistory) {
      history.remove(key as string);
      // The source ID was the key's first part; a key that did not read back as parts is dropped.
      const sourceId =
        typeof key === 'string'
          ? key.split(LEGACY_SEP)[0]
          : Array.isArray(key) && typeof key[0] === 'string'
            ? key[0]
            : undefined;
      if (sourceId) history.put(historyKey(keyPart(sourceId), value), value);
    }
    for (const { key, value } of oldActivity) {
      activity.remove(key as string);
      activity.put(activityKey(value), value);
    }
  });
  return oldHistory.length + oldActivity.length;
}
