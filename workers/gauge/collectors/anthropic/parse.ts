import {
  count,
  countOrZero,
  currency,
  cursor,
  decimal,
  isoDate,
  list,
  malformed,
  record,
  type Json,
} from '../hosted-shape.ts';

// Anthropic Admin API report pages, all `{data: [...], has_more, next_page}`:
// - Usage and Cost Analytics API (beta `analytics-usage-cost-2026-08-24`): rows `{starting_at, ending_at, group,
//   usage: {uncached_input_tokens, cache_creation: {ephemeral_5m_input_tokens, ephemeral_1h_input_tokens},
//   cache_read_input_tokens, output_tokens, requests}}` and `{..., cost: {amount, currency, list_amount,
//   requests}}`, amounts in fractional cents;
// - the legacy usage_report/messages and cost_report: buckets `{starting_at, ending_at, results: [...]}`, cost
//   `amount` a decimal string in cents ("123.45" = $1.23);
// - rate_limits: `{type: "rate_limit", id, group: {type, id, display_name (model groups only)}, models, limits:
//   [{type, value}]}`; before the GA shape the group's type stood in a top-level `group_type`, still read.
// Group fields (workspace, API key, actor IDs) are never kept.

export const PROVIDER = 'Anthropic';
const MAX_ROWS = 1000;
const MAX_LIMITS = 50;

export interface UsageRow {
  /** Start of the bucket, epoch ms. */
  start: number;
  input: number;
  output: number;
  /** null where the report has no request count (the legacy report). */
  requests: number | null;
}

export interface CostRow {
  start: number;
  /** In the currency's major unit (dollars): both reports give cents and are divided here. */
  amount: number;
  currency: string;
}

export interface Ceiling {
  group: string;
  type: string;
  value: number;
}

export interface Page<T> {
  rows: T[];
  next: string | null;
}

function pageOf(json: unknown): { data: unknown[]; next: string | null } {
  const page = record(json, PROVIDER, 'page');
  const data = list(page.data, PROVIDER, 'data', MAX_ROWS);
  if (page.has_more !== undefined && typeof page.has_more !== 'boolean') throw malformed(PROVIDER, 'has_more');
  const next = page.has_more === false ? null : cursor(page.next_page, PROVIDER);
  if (page.has_more === true && next === null) throw malformed(PROVIDER, 'next_page');
  return { data, next };
}

function startOf(row: Json): number {
  const iso = isoDate(row.starting_at);
  if (iso === null) throw malformed(PROVIDER, 'starting_at');
  return Date.parse(iso);
}

/** Input as billed: uncached plus cache writes plus cache reads (the legacy report splits them the same way). */
function tokensOf(usage: Json): { input: number; output: number } {
  const creation =
    usage.cache_creation === undefined || usage.cache_creation === null
      ? {}
      : record(usage.cache_creation, PROVIDER, 'cache_creation');
  const input =
    countOrZero(usage.uncached_input_tokens, PROVIDER, 'uncached_input_tokens') +
    countOrZero(creation.ephemeral_5m_input_tokens, PROVIDER, 'ephemeral_5m_input_tokens') +
    countOrZero(creation.ephemeral_1h_input_tokens, PROVIDER, 'ephemeral_1h_input_tokens') +
    countOrZero(usage.cache_read_input_tokens, PROVIDER, 'cache_read_input_tokens');
  return { input, output: countOrZero(usage.output_tokens, PROVIDER, 'output_tokens') };
}

export function parseAnalyticsUsage(json: unknown): Page<UsageRow> {
  const { data, next } = pageOf(json);
  const rows = data.map((value): UsageRow => {
    const row = record(value, PROVIDER, 'usage row');
    const usage = record(row.usage, PROVIDER, 'usage');
    return {
      start: startOf(row),
      ...tokensOf(usage),
      requests: count(usage.requests, PROVIDER, 'requests', { nullable: true }),
    };
  });
  return { rows, next };
}

export function parseLegacyUsage(json: unknown): Page<UsageRow> {
  const { data, next } = pageOf(json);
  const rows: UsageRow[] = [];
  for (const value of data) {
    const bucket = record(value, PROVIDER, 'bucket');
    const start = startOf(bucket);
    for (const result of list(bucket.results, PROVIDER, 'results', MAX_ROWS)) {
      rows.push({ start, ...tokensOf(record(result, PROVIDER, 'result')), requests: null });
    }
  }
  return { rows, next };
}

function costOf(start: number, cost: Json): CostRow {
  return { start, amount: decimal(cost.amount, PROVIDER, 'amount') / 100, currency: currency(cost.currency, PROVIDER) };
}

export function parseAnalyticsCost(json: unknown): Page<CostRow> {
  const { data, next } = pageOf(json);
  const rows = data.map((value) => {
    const row = record(value, PROVIDER, 'cost row');
    return costOf(startOf(row), record(row.cost, PROVIDER, 'cost'));
  });
  return { rows, next };
}

export function parseLegacyCost(json: unknown): Page<CostRow> {
  const { data, next } = pageOf(json);
  const rows: CostRow[] = [];
  for (const value of data) {
    const bucket = record(value, PROVIDER, 'bucket');
    const start = startOf(bucket);
    for (const result of list(bucket.results, PROVIDER, 'results', MAX_ROWS))
      rows.push(costOf(start, record(result, PROVIDER, 'result')));
  }
  return { rows, next };
}

/**
 * A display label for a group, cut to a safe window-ID fragment; provider-side group IDs are not used. A model
 * group goes by its display name (else its first model); any other group (batch, files, skills, token_count,
 * web_search) by its type, so that each gets windows of its own.
 */
function groupLabel(entry: Json): string {
  const group = entry.group === undefined || entry.group === null ? {} : record(entry.group, PROVIDER, 'group');
  const models = entry.models === null || entry.models === undefined ? [] : list(entry.models, PROVIDER, 'models', 500);
  const type =
    typeof group.type === 'string' ? group.type : typeof entry.group_type === 'string' ? entry.group_type : null;
  let raw: string;
  if (typeof group.display_name === 'string') raw = group.display_name;
  else if (type !== null && type !== 'model_group') raw = type;
  else raw = typeof models[0] === 'string' ? models[0] : (type ?? 'group');
  return (
    raw
      .toLowerCase()
      .replace(/[^a-z0-9.]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 48) || 'group'
  );
}

export function parseRateLimits(json: unknown): Page<Ceiling> {
  const { data, next } = pageOf(json);
  const rows: Ceiling[] = [];
  for (const value of data) {
    const entry = record(value, PROVIDER, 'rate limit');
    const group = groupLabel(entry);
    for (const item of list(entry.limits, PROVIDER, 'limits', MAX_LIMITS)) {
      const limit = record(item, PROVIDER, 'limit');
      if (typeof limit.type !== 'string' || limit.type.length > 64) throw malformed(PROVIDER, 'limit type');
      rows.push({ group, type: limit.type, value: count(limit.value, PROVIDER, 'limit value') as number });
    }
  }
  return { rows, next };
}
