import { count, countOrZero, currency, cursor, decimal, list, malformed, record } from '../hosted-shape.ts';

// OpenAI's organization Usage and Costs pages (platform.openai.com API reference, "Usage" and "Costs"):
// `{object: "page", data: [{object: "bucket", start_time, end_time, results: [...]}], has_more, next_page}`.
// Only the figures the readings need are kept; group fields (project_id, api_key_id, ...) are dropped here.

export const PROVIDER = 'OpenAI';
/** 1d buckets: a month is at most 31 of them; a page never documents more than 180 (costs). */
const MAX_BUCKETS = 200;
/** group_by is not sent, so a bucket holds one result; the bound still allows documented groupings. */
const MAX_RESULTS = 2000;

export interface UsageBucket {
  startTime: number;
  inputTokens: number;
  outputTokens: number;
  requests: number;
}

export interface CostBucket {
  startTime: number;
  amount: number;
  currency: string;
}

export interface Page<T> {
  buckets: T[];
  next: string | null;
}

function pageOf(json: unknown): { data: unknown[]; next: string | null } {
  const page = record(json, PROVIDER, 'page');
  const data = list(page.data, PROVIDER, 'data', MAX_BUCKETS);
  if (typeof page.has_more !== 'boolean') throw malformed(PROVIDER, 'has_more');
  const next = page.has_more ? cursor(page.next_page, PROVIDER) : null;
  if (page.has_more && next === null) throw malformed(PROVIDER, 'next_page');
  return { data, next };
}

function bucketOf(value: unknown): { startTime: number; results: unknown[] } {
  const bucket = record(value, PROVIDER, 'bucket');
  const startTime = count(bucket.start_time, PROVIDER, 'start_time') as number;
  return { startTime, results: list(bucket.results, PROVIDER, 'results', MAX_RESULTS) };
}

export function parseUsagePage(json: unknown): Page<UsageBucket> {
  const { data, next } = pageOf(json);
  const buckets = data.map((value): UsageBucket => {
    const { startTime, results } = bucketOf(value);
    const sum: UsageBucket = { startTime, inputTokens: 0, outputTokens: 0, requests: 0 };
    for (const item of results) {
      const result = record(item, PROVIDER, 'result');
      // input_tokens already includes input_cached_tokens (the reference says so), so the cached figure is
      // not added again.
      sum.inputTokens += countOrZero(result.input_tokens, PROVIDER, 'input_tokens');
      sum.outputTokens += countOrZero(result.output_tokens, PROVIDER, 'output_tokens');
      sum.requests += countOrZero(result.num_model_requests, PROVIDER, 'num_model_requests');
    }
    return sum;
  });
  return { buckets, next };
}

export function parseCostPage(json: unknown): Page<CostBucket> {
  const { data, next } = pageOf(json);
  const buckets: CostBucket[] = [];
  for (const value of data) {
    const { startTime, results } = bucketOf(value);
    for (const item of results) {
      const result = record(item, PROVIDER, 'result');
      // `amount` is optional in the reference: a result without one carries no cost.
      if (result.amount === undefined || result.amount === null) continue;
      const amount = record(result.amount, PROVIDER, 'amount');
      buckets.push({
        startTime,
        amount: decimal(amount.value, PROVIDER, 'amount.value'),
        currency: currency(amount.currency, PROVIDER),
      });
    }
  }
  return { buckets, next };
}
