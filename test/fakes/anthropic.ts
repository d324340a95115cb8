import { anthropicError } from './anthropic/errors.ts';
import { messagesRoutes } from './anthropic/messages.ts';
import { bearerOf, startFake, type Handler, type RecordedRequest, type Reply, fakeControls } from './http.ts';
import { createState, type ScriptControls } from './script.ts';
import type { StreamControls } from './stream.ts';

export { anthropicError } from './anthropic/errors.ts';
export { DEFAULT_OUTPUT, DEFAULT_USAGE, type FakeOutput, type FakeToolCall, type FakeUsage } from './script.ts';

// Anthropic's API as its reference documents it: a key (`x-api-key`, or `Authorization: Bearer` as the v1
// SDKs send it) and `anthropic-version` on every request, errors as `{type: "error", error: {type,
// message}, request_id}`, and `GET /v1/models` paged by `limit` (1..1000, default 20), `after_id` /
// `before_id`, answering `{data, has_more, first_id, last_id}` with the newest models first (the order
// given to setModels). The Messages API lives in anthropic/messages.ts, shared with the llama-server and
// Ollama fakes; in-stream errors are `event: error`.

export interface FakeModel {
  id: string;
  displayName?: string;
  /** RFC 3339. */
  createdAt?: string;
}

export interface AnthropicFakeOptions {
  /** When set, `x-api-key` must equal it; without it any non-empty key is accepted. */
  apiKey?: string;
  /** Caps every page below the requested `limit`, to exercise paging without 1,000 models. */
  pageSize?: number;
}

export interface AnthropicFake extends StreamControls, ScriptControls {
  /** The API root, without /v1, as Anthropic's SDKs take it. */
  baseUrl: string;
  requests: RecordedRequest[];
  setModels(models: FakeModel[]): void;
  failNext(status: number, body: unknown, headers?: Record<string, string>): void;
  hangNext(): void;
  close(): Promise<void>;
}

function entry(m: FakeModel): Record<string, unknown> {
  return {
    type: 'model',
    id: m.id,
    display_name: m.displayName ?? m.id,
    created_at: m.createdAt ?? '2025-01-01T00:00:00Z',
  };
}

function page(models: FakeModel[], req: RecordedRequest, pageSize: number): Reply {
  const { limit: rawLimit = '20', after_id: afterId, before_id: beforeId } = req.query;
  const limit = /^\d+$/.test(rawLimit) ? Number(rawLimit) : NaN;
  if (!(limit >= 1 && limit <= 1000))
    return anthropicError(400, 'invalid_request_error', 'limit: Input should be less than or equal to 1000');
  if (afterId !== undefined && beforeId !== undefined) {
    return anthropicError(400, 'invalid_request_error', 'Cannot specify both after_id and before_id');
  }
  const size = Math.min(limit, pageSize);
  const indexOf = (id: string): number => models.findIndex((m) => m.id === id);

  let slice: FakeModel[];
  let hasMore: boolean;
  if (afterId !== undefined) {
    const at = indexOf(afterId);
    if (at < 0) return anthropicError(400, 'invalid_request_error', `after_id: unknown model ${afterId}`);
    slice = models.slice(at + 1, at + 1 + size);
    hasMore = at + 1 + size < models.length;
  } else if (beforeId !== undefined) {
    const at = indexOf(beforeId);
    if (at < 0) return anthropicError(400, 'invalid_request_error', `before_id: unknown model ${beforeId}`);
    slice = models.slice(Math.max(0, at - size), at);
    hasMore = at - size > 0;
  } else {
    slice = models.slice(0, size);
    hasMore = size < models.length;
  }
  return {
    status: 200,
    body: {
      data: slice.map(entry),
      has_more: hasMore,
      first_id: slice[0]?.id ?? null,
      last_id: slice.at(-1)?.id ?? null,
    },
  };
}

export async function start(options: AnthropicFakeOptions = {}): Promise<AnthropicFake> {
  let models: FakeModel[] = [];
  const pageSize = options.pageSize ?? 1000;
  const state = createState();
  const routes: Record<string, Handler> = {
    'GET /v1/models': (req) => page(models, req, pageSize),
    ...messagesRoutes({ dialect: 'anthropic', state }),
  };

  const server = await startFake({
    routes,
    authenticate(req) {
      // The API takes a key in `x-api-key` or, as the v1 SDKs send it, as `Authorization: Bearer`.
      const xApiKey = req.headers['x-api-key'];
      const bearer = bearerOf(req);
      const key = typeof xApiKey === 'string' && xApiKey !== '' ? xApiKey : bearer;
      if (key === null || key === '')
        return anthropicError(401, 'authentication_error', 'x-api-key header is required');
      if (options.apiKey !== undefined && key !== options.apiKey) {
        return anthropicError(
          401,
          'authentication_error',
          key === bearer ? 'invalid bearer token' : 'invalid x-api-key',
        );
      }
      if (req.headers['anthropic-version'] === undefined) {
        return anthropicError(400, 'invalid_request_error', 'anthropic-version: header is required');
      }
      return null;
    },
    notFound: () => anthropicError(404, 'not_found_error', 'Not found'),
    invalid: (message) => anthropicError(400, 'invalid_request_error', message),
    streamError: { type: 'overloaded_error', message: 'Overloaded' },
  });

  return {
    ...fakeControls(server, state),
    baseUrl: server.origin,
    setModels(next) {
      models = [...next];
    },
  };
}
