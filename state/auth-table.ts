import type { Scope } from '../protocol/scopes.ts';
import type { AuthResult, TokenAuthPort } from '../protocol/ports/tokens.ts';
import { tokenHash } from '../protocol/token-secret.ts';

// What an edge thread authenticates a request against: the live tokens' hashes and scopes, kept by the control
// plane (control/token-service.ts) and sent as a whole table once, then as changes. The table never holds a
// secret, only its hash. A revoked, changed or expired token takes effect on the next request after its change
// arrives; the edge notes each token's last use here and the control plane takes them in batches.

export interface AuthEntry {
  tokenId: string;
  hash: string;
  scopes: readonly Scope[];
  serviceAccountId: string | null;
  expiresAt: number | null;
}

/** A whole table, or the entries put (new or changed) and the token IDs removed since the last change. */
export type AuthChange = { whole: AuthEntry[] } | { put: AuthEntry[]; remove: string[] };

export interface AuthTable extends TokenAuthPort {
  apply(change: AuthChange): void;
  /** Each token's latest use since the last call, as [tokenId, ms]; empties the list. */
  takeUses(): [string, number][];
}

/** Secrets whose hash is remembered, so a busy client's token is not hashed on every request. */
const RECENT_HASHES = 64;

export function createAuthTable(now: () => number = Date.now): AuthTable {
  const byHash = new Map<string, AuthEntry>();
  const hashOf = new Map<string, string>();
  // Only hashes are cached: a change to the entry behind one still applies on the next request.
  const recentHashes = new Map<string, string>();
  let uses = new Map<string, number>();

  const put = (e: AuthEntry) => {
    const old = hashOf.get(e.tokenId);
    if (old !== undefined) byHash.delete(old);
    hashOf.set(e.tokenId, e.hash);
    byHash.set(e.hash, e);
  };
  const remove = (tokenId: string) => {
    const old = hashOf.get(tokenId);
    if (old !== undefined) byHash.delete(old);
    hashOf.delete(tokenId);
    uses.delete(tokenId);
  };

  return {
    apply(change) {
      if ('whole' in change) {
        byHash.clear();
        hashOf.clear();
        for (const e of change.whole) put(e);
        for (const id of uses.keys()) if (!hashOf.has(id)) uses.delete(id);
        return;
      }
      for (const id of change.remove) remove(id);
      for (const e of change.put) put(e);
    },
    authenticate(secret): AuthResult {
      const hash = recentHashes.get(secret) ?? tokenHash(secret);
      const entry = hash === undefined ? undefined : byHash.get(hash);
      if (entry === undefined) return { ok: false, reason: 'unknown' };
      if (recentHashes.size >= RECENT_HASHES) recentHashes.clear();
      recentHashes.set(secret, hash!);
      const at = now();
      if (entry.expiresAt !== null && entry.expiresAt <= at) return { ok: false, reason: 'expired' };
      uses.set(entry.tokenId, at);
      return {
        ok: true,
        principal: { tokenId: entry.tokenId, scopes: entry.scopes, serviceAccountId: entry.serviceAccountId },
      };
    },
    takeUses() {
      if (uses.size === 0) return [];
      const taken = [...uses];
      uses = new Map();
      return taken;
    },
  };
}
