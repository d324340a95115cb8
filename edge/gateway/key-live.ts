import type { CredentialPoolState } from '../../protocol/http/providers.ts';
import type { HeadroomWindow } from '../../protocol/ratelimit-headers.ts';
import type { KeyLive } from './key-pool.ts';

// The key pool's figures of a key as GET /v1/providers/{id}/credentials shows them (docs/api.md, Key pools).

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());
const figure = (w: HeadroomWindow | null) =>
  w === null || (w.remaining === null && w.limit === null)
    ? null
    : { remaining: w.remaining, limit: w.limit, resetsAt: iso(w.resetsAt) };

/** `refusedAt`: when a thread set the key aside since its last edit (KeyPool.refusedAt). */
export function credentialLive(live: KeyLive, refusedAt: number | null): CredentialPoolState {
  return {
    refusedAt: iso(refusedAt),
    headroom:
      live.headroom === null
        ? null
        : { requests: figure(live.headroom.requests), tokens: figure(live.headroom.tokens) },
    coolingUntil: iso(live.coolingUntil),
    sessions: live.sessions,
  };
}
