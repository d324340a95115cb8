import type { RecordedRequest, Reply } from '../http.ts';
import { anthropicError } from '../anthropic/errors.ts';
import { decodeCursor, encodeCursor, startGaugeFake, type GaugeFakeControls } from './shared.ts';

// Anthropic's Admin API reports as platform.claude.com documents them, `x-api-key` + `anthropic-version`:
// - Usage and Cost Analytics API (beta, `anthropic-beta: analytics-usage-cost-2026-08-24`):
//   `GET /v1/organizations/analytics/usage` and `/cost`, one row per day with `time_bucket_width=1d`;
// - legacy `GET /v1/organizations/usage_report/messages` and `/cost_report` (amount: decimal string in cents);
// - `GET /v1/organizations/rate_limits`.
// One set of daily figures feeds both APIs, so a test can switch the analytics API off (404, as for an
// organization that does not serve it) and expect the same totals from the legacy reports.

export interface FakeDay {
  /** YYYY-MM-DD (UTC). */
  day: string;
  uncached: number;
  cacheWrite5m: number;
  cacheWrite1h: number;
  cacheRead: number;
  output: number;
  requests: number;
  /** Cost in cents, may be fractional. */
  cents: number;
}

export interface FakeRateLimit {
  groupType: 'model_group' | 'batch' | 'files' | 'skills' | 'token_count' | 'web_search';
  displayName?: string;
  models: string[] | null;
  limits: Array<{ type: string; value: number }>;
  /** Also send the deprecated top-level `group_type` (the shape before the GA `group` object). */
  legacyGroupType?: boolean;
}

export interface AnthropicGaugeFake extends GaugeFakeControls {
  setDays(days: FakeDay[]): void;
  setRateLimits(entries: FakeRateLimit[] | null): void;
  /** Off: the analytics endpoints answer 404. */
  setAnalytics(on: boolean): void;
  setPageSize(size: number): void;
}

const BETA = 'analytics-usage-cost-2026-08-24';

export async function startAnthropicGaugeFake(options: { adminKey: string }): Promise<AnthropicGaugeFake> {
  let days: FakeDay[] = [];
  let rateLimits: FakeRateLimit[] | null = [];
  let analytics = true;
  let pageSize = 0;

  function paged(req: RecordedRequest, rows: unknown[], defaultSize: number, maxSize: number): Reply {
    const limit = req.query.limit === undefined ? defaultSize : Number(req.query.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > maxSize)
      return anthropicError(400, 'invalid_request_error', `limit: must be between 1 and ${maxSize}`);
    const offset = req.query.page === undefined ? 0 : decodeCursor('page_', req.query.page);
    if (offset === null) return anthropicError(400, 'invalid_request_error', 'page: invalid cursor');
    const size = pageSize > 0 ? Math.min(pageSize, limit) : limit;
    const hasMore = offset + size < rows.length;
    return {
      status: 200,
      body: {
        data: rows.slice(offset, offset + size),
        has_more: hasMore,
        next_page: hasMore ? encodeCursor('page_', offset + size) : null,
      },
    };
  }

  function selected(req: RecordedRequest): FakeDay[] | Reply {
    const start = Date.parse(req.query.starting_at ?? '');
    if (Number.isNaN(start)) return anthropicError(400, 'invalid_request_error', 'starting_at: Field required');
    return days.filter((d) => Date.parse(`${d.day}T00:00:00Z`) >= start).sort((a, b) => a.day.localeCompare(b.day));
  }

  const bounds = (d: FakeDay) => {
    const starting = `${d.day}T00:00:00Z`;
    return {
      starting_at: starting,
      ending_at: new Date(Date.parse(starting) + 86_400_000).toISOString().replace('.000Z', 'Z'),
    };
  };
  const cacheCreation = (d: FakeDay) => ({
    ephemeral_1h_input_tokens: d.cacheWrite1h,
    ephemeral_5m_input_tokens: d.cacheWrite5m,
  });

  function analyticsGate(req: RecordedRequest): Reply | null {
    if (!analytics) return anthropicError(404, 'not_found_error', 'Not found');
    const betas = String(req.headers['anthropic-beta'] ?? '')
      .split(',')
      .map((b) => b.trim());
    if (!betas.includes(BETA))
      return anthropicError(
        400,
        'invalid_request_error',
        `This endpoint requires the beta header anthropic-beta: ${BETA}`,
      );
    if (req.query.time_bucket_width !== '1d')
      return anthropicError(400, 'invalid_request_error', 'time_bucket_width: the fake serves 1d buckets only');
    return null;
  }

  const fake = await startGaugeFake({
    prefix: '',
    authenticate(req) {
      if (req.headers['x-api-key'] !== options.adminKey)
        return anthropicError(401, 'authentication_error', 'invalid x-api-key');
      if (req.headers['anthropic-version'] === undefined)
        return anthropicError(400, 'invalid_request_error', 'anthropic-version: header is required');
      return null;
    },
    notFound: (req) => anthropicError(404, 'not_found_error', `Not found: ${req.path}`),
    routes: {
      'GET /v1/organizations/analytics/usage': (req) => {
        const refused = analyticsGate(req);
        const rows = selected(req);
        if (refused !== null) return refused;
        if (!Array.isArray(rows)) return rows;
        const data = rows.map((d) => ({
          ...bounds(d),
          group: {},
          usage: {
            uncached_input_tokens: d.uncached,
            cache_creation: cacheCreation(d),
            cache_read_input_tokens: d.cacheRead,
            output_tokens: d.output,
            requests: d.requests,
            server_tool_use: { web_search_requests: 0 },
          },
        }));
        return paged(req, data, 31, 1000);
      },
      'GET /v1/organizations/analytics/cost': (req) => {
        const refused = analyticsGate(req);
        const rows = selected(req);
        if (refused !== null) return refused;
        if (!Array.isArray(rows)) return rows;
        const data = rows.map((d) => ({
          ...bounds(d),
          group: {},
          cost: { amount: String(d.cents), currency: 'USD', list_amount: String(d.cents), requests: d.requests },
        }));
        return paged(req, data, 31, 1000);
      },
      'GET /v1/organizations/usage_report/messages': (req) => {
        const rows = selected(req);
        if (!Array.isArray(rows)) return rows;
        const data = rows.map((d) => ({
          ...bounds(d),
          results: [
            {
              uncached_input_tokens: d.uncached,
              cache_creation: cacheCreation(d),
              cache_read_input_tokens: d.cacheRead,
              output_tokens: d.output,
              server_tool_use: { web_search_requests: 0 },
              api_key_id: null,
              workspace_id: null,
              model: null,
              service_tier: null,
              context_window: null,
            },
          ],
        }));
        return paged(req, data, 7, 31);
      },
      'GET /v1/organizations/cost_report': (req) => {
        const rows = selected(req);
        if (!Array.isArray(rows)) return rows;
        const data = rows.map((d) => ({
          ...bounds(d),
          results: [
            {
              currency: 'USD',
              amount: d.cents.toFixed(2),
              workspace_id: null,
              description: null,
              cost_type: null,
              context_window: null,
              model: null,
              service_tier: null,
              token_type: null,
            },
          ],
        }));
        return paged(req, data, 7, 31);
      },
      'GET /v1/organizations/rate_limits': (req) => {
        if (rateLimits === null) return anthropicError(404, 'not_found_error', 'Not found');
        const data = rateLimits.map((entry, i) => ({
          type: 'rate_limit',
          id: `rl_fake${String(i).padStart(4, '0')}`,
          group: {
            id: `rlg_fake${String(i).padStart(4, '0')}`,
            type: entry.groupType,
            ...(entry.displayName === undefined ? {} : { display_name: entry.displayName }),
          },
          ...(entry.legacyGroupType === true ? { group_type: entry.groupType } : {}),
          models: entry.models,
          limits: entry.limits,
        }));
        // Without `limit` the reference returns every entry in one page with next_page null.
        if (req.query.limit === undefined && req.query.page === undefined && pageSize === 0)
          return { status: 200, body: { data, has_more: false, next_page: null } };
        return paged(req, data, data.length || 1, 1000);
      },
    },
  });
  return Object.assign(fake, {
    setDays(next: FakeDay[]) {
      days = next;
    },
    setRateLimits(next: FakeRateLimit[] | null) {
      rateLimits = next;
    },
    setAnalytics(on: boolean) {
      analytics = on;
    },
    setPageSize(size: number) {
      pageSize = size;
    },
  });
}
