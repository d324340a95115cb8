import type { KeyPoolTable } from '../../state/key-pool-table.ts';
import type { HeadroomWindow } from '../../protocol/ratelimit-headers.ts';
import { sessionHash } from '../../state/key-pool-table.ts';
import { headroomOf, retryAfterMs } from '../../protocol/ratelimit-headers.ts';

// Which of a provider's keys serves a call (W4.2; docs/api.md, Key pools). The keys that are enabled, not set
// aside and not cooling down are considered; a session keeps the key it first used while that key has headroom
// (so the upstream's prompt cache stays warm); otherwise the key with the most headroom is taken: the share left
// of its tightest live window (its rate-limit headers), times its weight, over one plus its calls in flight (so
// that calls starting together spread before any header is back). The figures live in a shared table, so every
// edge thread chooses from the same ones.

/** What the pool reads of a key (a provider's CredentialRecord). */
export interface PoolKey {
  id: string;
  weight: number;
  enabled: boolean;
  /** Set aside by the control plane after a 401/403, until edited. */
  rejectedAt: number | null;
  updatedAt: number;
}

/** A cooldown when a 429 names no time: about the shortest rate-limit window the providers use. */
const DEFAULT_COOLDOWN_MS = 5_000;
/** A cooldown is never longer than this, whatever an upstream's header says. */
const MAX_COOLDOWN_MS = 10 * 60_000;

export interface KeyPoolOptions {
  table: KeyPoolTable;
  now?: () => number;
  /** How long a session keeps its key without a call (a setting; 10 minutes by default). */
  idleMs(): number;
}

export interface KeyLive {
  headroom: { requests: HeadroomWindow | null; tokens: HeadroomWindow | null } | null;
  coolingUntil: number | null;
  sessions: number;
  inflight: number;
}

export interface KeyPool {
  /** The key for a call of `session` (null: none named) to `providerId`; null when no key is usable. */
  choose<K extends PoolKey>(
    providerId: string,
    keys: readonly K[],
    session: string | null,
    exclude?: ReadonlySet<string>,
  ): K | null;
  began(keyId: string): void;
  ended(keyId: string): void;
  /** An answer's head: its rate-limit headers become the key's headroom. */
  observe(keyId: string, headers: Readonly<Record<string, string | undefined>>): void;
  /** A 429 or 529: the key cools down until `retry-after`, else its exhausted window's reset. */
  rateLimited(keyId: string, headers: Readonly<Record<string, string | undefined>>): number;
  /** A 401 or 403: the key is set aside on every thread at once, until it is edited. */
  rejected(keyId: string): void;
  /** Whether the key is set aside: refused by the provider, in its record or on any thread since its last edit. */
  refused(key: PoolKey): boolean;
  /** When a thread set the key aside since its last edit (its record may not say so yet); null when none did. */
  refusedAt(key: PoolKey): number | null;
  live(keyId: string): KeyLive;
}

export function createKeyPool({ table, now = Date.now, idleMs }: KeyPoolOptions): KeyPool {
  const usable = (key: PoolKey, slot: number) =>
    key.enabled && key.rejectedAt === null && !(table.rejectedAt(slot) >= key.updatedAt);

  return {
    choose(providerId, keys, session, exclude) {
      const at = now();
      const idle = idleMs();
      const hash = session === null ? 0n : sessionHash(providerId, session);
      const kept = session === null ? -1 : table.sessionKey(hash, at, idle);
      let best: (typeof keys)[number] | null = null;
      let bestSlot = -1;
      let bestScore = -1;
      let soonest: (typeof keys)[number] | null = null;
      let soonestSlot = -1;
      let soonestAt = Number.POSITIVE_INFINITY;
      for (const key of keys) {
        if (exclude?.has(key.id)) continue;
        const slot = table.slotOf(key.id);
        if (slot < 0 || !usable(key, slot)) continue;
        const cooling = table.coolingUntil(slot);
        if (cooling > at) {
          if (cooling < soonestAt) [soonest, soonestSlot, soonestAt] = [key, slot, cooling];
          continue;
        }
        const share = table.share(slot, at);
        if (slot === kept && share > 0) {
          table.keepSession(hash, slot, at, idle);
          return key;
        }
        const score = (key.weight * share) / (1 + table.inflight(slot));
        if (score > bestScore) [best, bestSlot, bestScore] = [key, slot, score];
      }
      // Every usable key cooling down: the one whose cooldown ends first (the upstream may take it already).
      if (best === null) [best, bestSlot] = [soonest, soonestSlot];
      if (best !== null && session !== null) table.keepSession(hash, bestSlot, at, idle);
      return best;
    },
    began(keyId) {
      const slot = table.slotOf(keyId);
      if (slot >= 0) table.began(slot);
    },
    ended(keyId) {
      const slot = table.slotOf(keyId);
      if (slot >= 0) table.ended(slot);
    },
    observe(keyId, headers) {
      const slot = table.slotOf(keyId);
      if (slot < 0) return;
      const { requests, tokens } = headroomOf(headers, now());
      if (requests !== null || tokens !== null) table.observe(slot, requests, tokens);
    },
    rateLimited(keyId, headers) {
      const at = now();
      const slot = table.slotOf(keyId);
      const { requests, tokens } = headroomOf(headers, at);
      const exhausted = [requests, tokens].filter((w) => w !== null && w.remaining === 0 && w.resetsAt !== null);
      const wait =
        retryAfterMs(headers['retry-after'], at) ??
        (exhausted.length > 0 ? Math.max(...exhausted.map((w) => w!.resetsAt! - at)) : DEFAULT_COOLDOWN_MS);
      const until = at + Math.min(MAX_COOLDOWN_MS, Math.max(0, wait));
      if (slot >= 0) {
        table.observe(slot, requests, tokens);
        table.cool(slot, until);
      }
      return until;
    },
    rejected(keyId) {
      const slot = table.slotOf(keyId);
      if (slot >= 0) table.reject(slot, now());
    },
    refused(key) {
      const slot = table.slotOf(key.id);
      return key.rejectedAt !== null || (slot >= 0 && table.rejectedAt(slot) >= key.updatedAt);
    },
    refusedAt(key) {
      const slot = table.slotOf(key.id);
      const at = slot < 0 ? Number.NaN : table.rejectedAt(slot);
      return at >= key.updatedAt ? at : null;
    },
    live(keyId) {
      const at = now();
      const slot = table.slotOf(keyId);
      if (slot < 0) return { headroom: null, coolingUntil: null, sessions: 0, inflight: 0 };
      const state = table.read(slot);
      const seen = state.requests.remaining !== null || state.tokens.remaining !== null;
      return {
        headroom: seen ? { requests: state.requests, tokens: state.tokens } : null,
        coolingUntil: state.coolingUntil !== null && state.coolingUntil > at ? state.coolingUntil : null,
        sessions: table.sessionsOf(slot, at, idleMs()),
        inflight: state.inflight,
      };
    },
  };
}
