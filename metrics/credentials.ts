import type { UsageEvent } from '../protocol/gateway.ts';
import { MAX_SERIES, OTHER, type CounterChild, type Registry } from './registry.ts';

// The key pool on /metrics (docs/api.md, Key pools): calls by the key that served them, counted as they are
// metered, and each key's live state read from the pool's shared table at a scrape. Labels are bounded: a
// provider record's ID (at most 63 characters) and a credential ID the service made (`key_` and a ULID); past
// MAX_SERIES the registry folds new label sets into `other`.

/** What a scrape reads of one key. */
export interface CredentialState {
  providerId: string;
  credentialId: string;
  /** disabled by its owner, set aside after a 401/403, cooling down after a 429/529, else usable. */
  state: 'usable' | 'cooling' | 'rejected' | 'disabled';
  /** Remaining requests and tokens of its live windows, as its last answer's headers said; null: unknown. */
  requestsRemaining: number | null;
  tokensRemaining: number | null;
  inflight: number;
  sessions: number;
}

const STATES = ['usable', 'cooling', 'rejected', 'disabled'] as const;

export function createCredentialMetrics(registry: Registry, keys: () => Iterable<CredentialState>) {
  const calls = registry.counter(
    'switchyard_credential_calls_total',
    'Metered gateway calls by provider, the key that served them and outcome (keyed providers only).',
    ['provider', 'credential', 'outcome'],
  );
  const state = registry.gauge(
    'switchyard_credential_state',
    'Each provider key: 1 on its state now (usable, cooling, rejected, disabled).',
    ['provider', 'credential', 'state'],
  );
  const remaining = registry.gauge(
    'switchyard_credential_remaining',
    "A key's remaining requests or tokens in its current rate-limit window, from the upstream's headers.",
    ['provider', 'credential', 'window'],
  );
  const inflight = registry.gauge('switchyard_credential_in_flight', 'Calls a key serves now.', [
    'provider',
    'credential',
  ]);
  const sessions = registry.gauge('switchyard_credential_sessions', 'Sessions kept on a key now.', [
    'provider',
    'credential',
  ]);

  // By provider and credential ID, both bounded; the map stops growing at MAX_SERIES keys (then `other`).
  const counted = new Map<string, Map<string, CounterChild>>();

  registry.onCollect(() => {
    // Rebuilt from the pool each time: a removed key's series goes away with it.
    state.reset();
    remaining.reset();
    inflight.reset();
    sessions.reset();
    for (const k of keys()) {
      for (const s of STATES) state.labels(k.providerId, k.credentialId, s).set(s === k.state ? 1 : 0);
      if (k.requestsRemaining !== null)
        remaining.labels(k.providerId, k.credentialId, 'requests').set(k.requestsRemaining);
      if (k.tokensRemaining !== null) remaining.labels(k.providerId, k.credentialId, 'tokens').set(k.tokensRemaining);
      inflight.labels(k.providerId, k.credentialId).set(k.inflight);
      sessions.labels(k.providerId, k.credentialId).set(k.sessions);
    }
  });

  return {
    /** A metered call: counted under the key that served it, when a key did. */
    usage(event: UsageEvent): void {
      const id = event.credentialId;
      if (id === undefined) return;
      let byOutcome = counted.get(id);
      if (byOutcome === undefined) {
        byOutcome = new Map();
        if (counted.size < MAX_SERIES) counted.set(id, byOutcome);
      }
      let counter = byOutcome.get(event.outcome);
      if (counter === undefined) {
        const credential = counted.has(id) ? id : OTHER;
        byOutcome.set(event.outcome, (counter = calls.labels(event.providerId, credential, event.outcome)));
      }
      counter.inc();
    },
  };
}
