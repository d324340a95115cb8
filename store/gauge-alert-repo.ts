import type { GaugeAlertEvent, GaugeAlertRule } from '../protocol/gauge-money.ts';
import type { StoreEnv } from './env.ts';
import { boundedKey } from './keys.ts';

// Gauge's alert rules and the events they fired. The edge is the only writer. Rule and event IDs are ours
// (monotonic ULIDs, so key order is creation order); a dedupe key carries upstream values (window IDs, reset
// times), so it reaches a key only through boundedKey. An index by rule lets a rule's deletion take exactly
// its own events.

export interface StoredAlertEvent extends GaugeAlertEvent {
  /** The dedupe key less its period part: what the rule's cooldown counts per. Never shown. */
  scope: string;
  /** The condition was seen clear after this event fired: a later breach is a new episode. Never shown. */
  cleared: boolean;
}

export interface GaugeAlertRepo {
  /** In creation order. */
  rules(): GaugeAlertRule[];
  rule(id: string): GaugeAlertRule | undefined;
  stagePutRule(rule: GaugeAlertRule): void;
  event(id: string): StoredAlertEvent | undefined;
  /** Oldest first; `reverse` for newest first. */
  events(reverse?: boolean): Iterable<StoredAlertEvent>;
  /** The ID of the latest event fired under `dedupeKey`. */
  latestFor(dedupeKey: string): string | undefined;
  stagePutEvent(event: StoredAlertEvent): void;
  /** The rule, its events and their index entries in one transaction with `alongside`; returns the event count. */
  removeRule(id: string, alongside?: () => void): Promise<number>;
  /**
   * Events resolved before `beforeMs` whose condition has cleared since, so history follows
   * gauge.retentionDays without forgetting an episode that still holds (it would fire again).
   */
  pruneResolved(beforeMs: number): Promise<number>;
}

// Rule IDs are ours (`arule_` + a ULID), so a printable separator is safe; lmdb-js reads a key holding NUL back
// as an array of its parts.
const SEP = ':';
const END = ';';

export function gaugeAlertRepo(env: StoreEnv): GaugeAlertRepo {
  const rules = env.db<GaugeAlertRule>('gauge-alert-rules');
  const events = env.db<StoredAlertEvent>('gauge-alert-events');
  const byRule = env.db<true>('gauge-alert-by-rule');
  const dedupe = env.db<string>('gauge-alert-dedupe');

  function stageRemoveEvent(e: StoredAlertEvent): void {
    events.remove(e.id);
    byRule.remove(`${e.ruleId}${SEP}${e.id}`);
    const key = boundedKey(e.dedupeKey);
    if (dedupe.get(key) === e.id) dedupe.remove(key);
  }

  return {
    rules: () => [...rules.getRange().map(({ value }) => value)],
    rule: (id) => rules.get(id),
    stagePutRule: (rule) => void rules.put(rule.id, rule),
    event: (id) => events.get(id),
    events: (reverse = false) => events.getRange({ reverse }).map(({ value }) => value),
    latestFor: (dedupeKey) => dedupe.get(boundedKey(dedupeKey)),
    stagePutEvent(e) {
      const known = events.get(e.id) !== undefined;
      events.put(e.id, e);
      if (known) return;
      byRule.put(`${e.ruleId}${SEP}${e.id}`, true);
      dedupe.put(boundedKey(e.dedupeKey), e.id);
    },
    async removeRule(id, alongside) {
      const ids = [...byRule.getKeys({ start: `${id}${SEP}`, end: `${id}${END}` })].map((k) => k.slice(id.length + 1));
      await env.commit(() => {
        for (const eventId of ids) {
          const e = events.get(eventId);
          if (e) stageRemoveEvent(e);
          else byRule.remove(`${id}${SEP}${eventId}`);
        }
        rules.remove(id);
        alongside?.();
      });
      return ids.length;
    },
    async pruneResolved(beforeMs) {
      const old = [
        ...events
          .getRange()
          .filter(({ value }) => value.cleared && value.resolvedAt !== null && Date.parse(value.resolvedAt) < beforeMs)
          .map(({ value }) => value),
      ];
      if (old.length > 0) await env.commit(() => old.forEach(stageRemoveEvent));
      return old.length;
    },
  };
}
