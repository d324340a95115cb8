import { count, isoDate, isRecord, record, type Json } from '../hosted-shape.ts';

// GitHub's Copilot entitlement answer, `GET /copilot_internal/user` (undocumented; the shape is the one Copilot's
// own editors and community quota tools read): paid plans carry `quota_snapshots.{premium_interactions, chat,
// completions}` with `{entitlement, remaining, percent_remaining, unlimited, overage_count, …}` and
// `quota_reset_date(_utc)`; the free plan carries `monthly_quotas` and `limited_user_quotas` (what is left) with
// `limited_user_reset_date`; `token_based_billing` marks accounts billed in AI credits (June 2026 on). Plan,
// SKU and organization lists are not kept; the login only travels as the collection's `identity`.

export const PROVIDER = 'GitHub Copilot';
export const SNAPSHOTS = ['premium_interactions', 'chat', 'completions'] as const;
export type SnapshotId = (typeof SNAPSHOTS)[number];

export interface Quota {
  id: SnapshotId;
  unlimited: boolean;
  entitlement: number | null;
  remaining: number | null;
  percentRemaining: number | null;
}

export interface CopilotUser {
  quotas: Quota[];
  resetsAt: string | null;
  creditBilled: boolean;
  /** The GitHub login, when the answer carries one: only ever the collection's `identity`, stored hashed. */
  identity: string | null;
}

function snapshot(id: SnapshotId, value: Json): Quota {
  return {
    id,
    unlimited: value.unlimited === true,
    entitlement: count(value.entitlement, PROVIDER, `${id}.entitlement`, { nullable: true }),
    // Overage can take `remaining` below zero.
    remaining: count(value.remaining, PROVIDER, `${id}.remaining`, { nullable: true, signed: true }),
    percentRemaining: count(value.percent_remaining, PROVIDER, `${id}.percent_remaining`, {
      nullable: true,
      signed: true,
    }),
  };
}

/** The free plan states its allowance and what is left per kind, with no percentages. */
function freeQuotas(monthly: Json, left: Json): Quota[] {
  const quotas: Quota[] = [];
  for (const id of ['chat', 'completions'] as const) {
    const entitlement = count(monthly[id], PROVIDER, `monthly_quotas.${id}`, { nullable: true });
    if (entitlement === null) continue;
    quotas.push({
      id,
      unlimited: false,
      entitlement,
      remaining: count(left[id], PROVIDER, `limited_user_quotas.${id}`, { nullable: true, signed: true }),
      percentRemaining: null,
    });
  }
  return quotas;
}

export function parseUser(json: unknown): CopilotUser {
  const body = record(json, PROVIDER, 'body');
  const quotas: Quota[] = [];
  if (body.quota_snapshots !== undefined && body.quota_snapshots !== null) {
    const snapshots = record(body.quota_snapshots, PROVIDER, 'quota_snapshots');
    for (const id of SNAPSHOTS)
      if (snapshots[id] !== undefined && snapshots[id] !== null)
        quotas.push(snapshot(id, record(snapshots[id], PROVIDER, id)));
  } else if (isRecord(body.monthly_quotas)) {
    const left =
      body.limited_user_quotas === undefined || body.limited_user_quotas === null
        ? {}
        : record(body.limited_user_quotas, PROVIDER, 'limited_user_quotas');
    quotas.push(...freeQuotas(body.monthly_quotas, left));
  }
  return {
    quotas,
    resetsAt:
      isoDate(body.quota_reset_date_utc) ?? isoDate(body.quota_reset_date) ?? isoDate(body.limited_user_reset_date),
    creditBilled: body.token_based_billing === true,
    identity: typeof body.login === 'string' && body.login.length > 0 && body.login.length <= 100 ? body.login : null,
  };
}
