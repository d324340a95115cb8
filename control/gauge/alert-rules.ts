import { ServiceError } from '../../protocol/errors.ts';
import type { AlertRuleKind, GaugeAlertRule } from '../../protocol/gauge-money.ts';

// What each alert rule kind takes beyond the schema: which target fields narrow it, and what its threshold
// means, with its range and default. A field a kind does not use is refused rather than ignored, so a rule
// never looks narrower than it is.

type TargetField = keyof GaugeAlertRule['target'];

interface KindSpec {
  target: readonly TargetField[];
  /** null: the kind takes no threshold (it must be null or absent). */
  threshold: { min: number; max: number; integer: boolean; fallback: number | null; nullable: boolean } | null;
}

const ACCOUNT: readonly TargetField[] = ['providerId', 'accountId'];

export const ALERT_KIND_SPECS: Readonly<Record<AlertRuleKind, KindSpec>> = {
  // Percent of the window left: fires below it.
  quota_low: { target: ACCOUNT, threshold: { min: 0.1, max: 99.9, integer: false, fallback: 20, nullable: false } },
  quota_exhausted: { target: ACCOUNT, threshold: null },
  quota_reset: { target: ACCOUNT, threshold: null },
  // Hours of warning: fires when the window runs out before it resets and within this many hours.
  forecast_exhaustion: {
    target: ACCOUNT,
    threshold: { min: 1, max: 720, integer: true, fallback: 24, nullable: false },
  },
  // Percent of the budget; null follows the budget's own thresholds.
  budget_threshold: {
    target: ['budgetId'],
    threshold: { min: 1, max: 1000, integer: false, fallback: null, nullable: true },
  },
  // Percent the estimate differs from the provider-reported spend.
  spend_drift: { target: ACCOUNT, threshold: { min: 1, max: 1000, integer: false, fallback: 20, nullable: false } },
  provider_incident: { target: ['providerId'], threshold: null },
  // Consecutive failed collections of a source (accountId names the source).
  collection_failing: { target: ACCOUNT, threshold: { min: 1, max: 100, integer: true, fallback: 3, nullable: false } },
  reauth_required: { target: ACCOUNT, threshold: null },
};

const bad = (param: string, message: string) => new ServiceError('INVALID_REQUEST', message, { param });

export function checkTarget(
  kind: AlertRuleKind,
  target: GaugeAlertRule['target'] | undefined,
): GaugeAlertRule['target'] {
  const allowed = ALERT_KIND_SPECS[kind].target;
  const out: GaugeAlertRule['target'] = {};
  for (const [field, value] of Object.entries(target ?? {}) as [TargetField, string | undefined][]) {
    if (value === undefined) continue;
    if (!allowed.includes(field)) {
      throw bad(
        `target.${field}`,
        `A \`${kind}\` rule does not use ` +
          `\`target.${field}\`${allowed.length > 0 ? `; it takes ${allowed.map((f) => `\`${f}\``).join(', ')}` : ''}.`,
      );
    }
    out[field] = value;
  }
  return out;
}

/** `given`: undefined on create means the kind's default; on update it keeps `current`. */
export function checkThreshold(
  kind: AlertRuleKind,
  given: number | null | undefined,
  current?: number | null,
): number | null {
  const spec = ALERT_KIND_SPECS[kind].threshold;
  if (given === undefined) return current !== undefined ? current : (spec?.fallback ?? null);
  if (spec === null) {
    if (given !== null) throw bad('threshold', `A \`${kind}\` rule takes no threshold; send null or leave it out.`);
    return null;
  }
  if (given === null) {
    if (!spec.nullable) throw bad('threshold', `A \`${kind}\` rule needs a threshold from ${spec.min} to ${spec.max}.`);
    return null;
  }
  if (!Number.isFinite(given) || given < spec.min || given > spec.max || (spec.integer && !Number.isInteger(given))) {
    throw bad(
      'threshold',
      `A \`${kind}\` rule's threshold must be ${spec.integer ? 'an integer' : 'a number'} from ${spec.min} to ` +
        `${spec.max}.`,
    );
  }
  return given;
}
