import type { CollectContext } from '../types.ts';
import { endpoint, getJson } from '../hosted-http.ts';
import { eachPage } from '../hosted-shape.ts';
import { PROVIDER, parseCostPage, parseUsagePage, type CostBucket, type UsageBucket } from './parse.ts';

// Both reports, every page, from the start of the UTC month: 1d buckets, 31 per page (the documented
// maximum for usage at 1d), so one page is the normal case and paging is the exception.

const MAX_PAGES = 12;
const DAYS_PER_PAGE = '31';

export interface OpenAIReports {
  usage: UsageBucket[];
  costs: CostBucket[];
  retryAfterMs: number | undefined;
}

async function collectPages<T>(
  ctx: CollectContext,
  url: (page: string | null) => URL,
  headers: Record<string, string>,
  parse: (json: unknown) => { buckets: T[]; next: string | null },
  sink: { retryAfterMs: number | undefined },
): Promise<T[]> {
  const all: T[] = [];
  await eachPage(PROVIDER, MAX_PAGES, async (page) => {
    const answer = await getJson(ctx, PROVIDER, url(page), headers);
    sink.retryAfterMs = answer.retryAfterMs ?? sink.retryAfterMs;
    const { buckets, next } = parse(answer.json);
    all.push(...buckets);
    return next;
  });
  return all;
}

export async function fetchReports(
  ctx: CollectContext,
  base: string,
  adminKey: string,
  since: Date,
): Promise<OpenAIReports> {
  const headers = { authorization: `Bearer ${adminKey}` };
  const startTime = String(Math.floor(since.getTime() / 1000));
  const query = (page: string | null) => ({
    start_time: startTime,
    bucket_width: '1d',
    limit: DAYS_PER_PAGE,
    page: page ?? undefined,
  });
  const sink = { retryAfterMs: undefined as number | undefined };
  const usage = await collectPages(
    ctx,
    (page) => endpoint(base, '/organization/usage/completions', query(page)),
    headers,
    parseUsagePage,
    sink,
  );
  const costs = await collectPages(
    ctx,
    (page) => endpoint(base, '/organization/costs', query(page)),
    headers,
    parseCostPage,
    sink,
  );
  return { usage, costs, retryAfterMs: sink.retryAfterMs };
}
