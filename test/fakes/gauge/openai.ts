import { bearerOf, type RecordedRequest, type Reply } from '../http.ts';
import { decodeCursor, encodeCursor, startGaugeFake, type GaugeFakeControls } from './shared.ts';

// OpenAI's organization Usage (completions) and Costs endpoints as the API reference documents them:
// `GET /v1/organization/usage/completions` and `GET /v1/organization/costs`, Admin key as a Bearer token,
// `{object: "page", data: [{object: "bucket", start_time, end_time, results}], has_more, next_page}`.
// Buckets are the test's; the fake filters them by `start_time`, pages them by `limit` (or a smaller page
// size the test sets) and can be told to hand out a cursor that never ends.

export interface FakeUsageResult {
  input_tokens: number;
  output_tokens: number;
  input_cached_tokens?: number;
  num_model_requests: number;
}

export interface FakeCostResult {
  value: number;
  currency?: string;
}

export interface FakeBucket<T> {
  /** Unix seconds; the bucket spans one day. */
  startTime: number;
  results: T[];
}

export interface OpenAIGaugeFake extends GaugeFakeControls {
  setUsage(buckets: FakeBucket<FakeUsageResult>[]): void;
  setCosts(buckets: FakeBucket<FakeCostResult>[]): void;
  /** Pages hold at most this many buckets whatever `limit` asks (0 = honour `limit`). */
  setPageSize(size: number): void;
  /** While on, every page says `has_more: true`: a cursor that never ends. */
  setEndless(on: boolean): void;
}

const LIMITS: Record<string, { usage: [number, number]; costs: [number, number] }> = {
  '1d': { usage: [7, 31], costs: [7, 180] },
  '1h': { usage: [24, 168], costs: [0, 0] },
  '1m': { usage: [60, 1440], costs: [0, 0] },
};

function openaiError(status: number, message: string, type: string, code: string | null): Reply {
  return { status, body: { error: { message, type, param: null, code } } };
}

export async function startOpenAIGaugeFake(options: { adminKey: string }): Promise<OpenAIGaugeFake> {
  let usage: FakeBucket<FakeUsageResult>[] = [];
  let costs: FakeBucket<FakeCostResult>[] = [];
  let pageSize = 0;
  let endless = false;

  function page<T>(
    req: RecordedRequest,
    kind: 'usage' | 'costs',
    buckets: FakeBucket<T>[],
    result: (r: T) => Record<string, unknown>,
  ): Reply {
    const startTime = Number(req.query.start_time);
    if (req.query.start_time === undefined || !Number.isInteger(startTime)) {
      return openaiError(
        400,
        "Missing required parameter: 'start_time'.",
        'invalid_request_error',
        'missing_required_parameter',
      );
    }
    const width = req.query.bucket_width ?? '1d';
    const bounds = LIMITS[width]?.[kind];
    if (bounds === undefined || bounds[1] === 0) {
      return openaiError(
        400,
        `Invalid value for 'bucket_width': '${width}'.`,
        'invalid_request_error',
        'invalid_value',
      );
    }
    const limit = req.query.limit === undefined ? bounds[0] : Number(req.query.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > bounds[1]) {
      return openaiError(
        400,
        `Invalid 'limit': must be between 1 and ${bounds[1]}.`,
        'invalid_request_error',
        'invalid_value',
      );
    }
    const offset = req.query.page === undefined ? 0 : decodeCursor('', req.query.page);
    if (offset === null) return openaiError(400, "Invalid 'page' cursor.", 'invalid_request_error', 'invalid_value');
    const size = pageSize > 0 ? Math.min(pageSize, limit) : limit;
    const selected = buckets.filter((b) => b.startTime >= startTime).sort((a, b) => a.startTime - b.startTime);
    const slice = selected.slice(offset, offset + size);
    const hasMore = endless || offset + size < selected.length;
    return {
      status: 200,
      body: {
        object: 'page',
        data: slice.map((b) => ({
          object: 'bucket',
          start_time: b.startTime,
          end_time: b.startTime + 86_400,
          results: b.results.map(result),
        })),
        has_more: hasMore,
        next_page: hasMore ? encodeCursor('', offset + size) : null,
      },
    };
  }

  const fake = await startGaugeFake({
    prefix: '/v1',
    authenticate(req) {
      const presented = bearerOf(req);
      if (presented === options.adminKey) return null;
      const message =
        presented === null
          ? "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer " +
            'auth (i.e. Authorization: Bearer YOUR_KEY).'
          : `Incorrect API key provided: ${presented.slice(0, 8)}***${presented.slice(-4)}. You can find your API ` +
            `key at https://platform.openai.com/account/api-keys.`;
      return openaiError(401, message, 'invalid_request_error', 'invalid_api_key');
    },
    notFound: (req) => openaiError(404, `Invalid URL (${req.method} ${req.path})`, 'invalid_request_error', null),
    routes: {
      'GET /v1/organization/usage/completions': (req) =>
        page(req, 'usage', usage, (r) => ({
          object: 'organization.usage.completions.result',
          input_tokens: r.input_tokens,
          output_tokens: r.output_tokens,
          input_cached_tokens: r.input_cached_tokens ?? 0,
          input_audio_tokens: 0,
          output_audio_tokens: 0,
          num_model_requests: r.num_model_requests,
          project_id: null,
          user_id: null,
          api_key_id: null,
          model: null,
          batch: null,
        })),
      'GET /v1/organization/costs': (req) =>
        page(req, 'costs', costs, (r) => ({
          object: 'organization.costs.result',
          amount: { value: r.value, currency: r.currency ?? 'usd' },
          line_item: null,
          project_id: null,
        })),
    },
  });
  return Object.assign(fake, {
    setUsage(buckets: FakeBucket<FakeUsageResult>[]) {
      usage = buckets;
    },
    setCosts(buckets: FakeBucket<FakeCostResult>[]) {
      costs = buckets;
    },
    setPageSize(size: number) {
      pageSize = size;
    },
    setEndless(on: boolean) {
      endless = on;
    },
  });
}
