import { ServiceError } from '../../protocol/errors.ts';
import {
  REQUEST_ID_RE,
  REQUEST_LOG_LIMIT,
  REQUEST_LOG_OUTCOMES,
  REQUEST_LOG_QUERY,
  checkReplayRequest,
  type RequestLogFilter,
  type RequestLogOutcome,
} from '../../protocol/http/request-log.ts';
import type { ReplayPort, RequestLogPort } from '../../protocol/ports/request-log.ts';
import { readQuery } from '../../protocol/query.ts';
import { route, type RouteDef } from '../http/router.ts';

// The request log's routes (docs/api.md, Request log). Entries hold prompts, answers and tool arguments, which
// `read` (dashboards, metrics scrapers) must not see: both routes take `admin`, as tokens do, since a token that
// reads every agent's prompts is as strong as one that makes tokens. Every parameter is checked before the store.

/** A session is bounded to this many characters where it is recorded (edge/gateway/affinity-session.ts). */
const SESSION_MAX = 256;
const MODEL_MAX = 1024;

const invalid = (param: string, message: string) => new ServiceError('INVALID_REQUEST', message, { param });

function readFilter(raw: string): RequestLogFilter {
  const q = readQuery(raw, REQUEST_LOG_QUERY);
  const filter: RequestLogFilter = {
    limit: q.int('limit', 1, REQUEST_LOG_LIMIT.max, REQUEST_LOG_LIMIT.default),
  };
  const session = q.string('session', SESSION_MAX);
  if (session !== undefined) filter.session = session;
  const model = q.string('model', MODEL_MAX);
  if (model !== undefined) filter.model = model;
  const status = q.string('status', 16);
  if (status !== undefined) {
    if ((REQUEST_LOG_OUTCOMES as readonly string[]).includes(status)) filter.outcome = status as RequestLogOutcome;
    else if (/^[1-5]\d\d$/.test(status)) filter.status = Number(status);
    else throw invalid('status', '`status` must be ok, failed, aborted or an HTTP status from 100 to 599.');
  }
  const from = q.dateTime('from');
  const to = q.dateTime('to');
  if (from !== undefined) filter.from = from;
  if (to !== undefined) filter.to = to;
  if (from !== undefined && to !== undefined && from > to) throw invalid('from', '`from` must not be later than `to`.');
  const cursor = q.string('cursor', 64);
  if (cursor !== undefined) {
    if (!REQUEST_ID_RE.test(cursor)) throw invalid('cursor', '`cursor` must be a `nextCursor` this route answered.');
    filter.cursor = cursor;
  }
  return filter;
}

/** The answer for a request ID the log does not hold (GET and replay alike). */
export const notLogged = (id: string) =>
  new ServiceError('NOT_FOUND', `The request log holds no request \`${id}\`.`, { param: 'id' });

/** Only our own IDs name an entry; anything else is refused before it reaches the store. */
function requestIdOf(id: string): string {
  if (!REQUEST_ID_RE.test(id))
    throw invalid('id', 'A request ID is `req_` and 26 characters, as the X-Request-Id header gives it.');
  return id;
}

/**
 * POST /v1/requests/{id}/replay: `admin`, as reading the entry is; the replay itself runs as that token, which
 * holds `inference` with every other scope.
 */
export function replayRoutes(replay: ReplayPort): RouteDef[] {
  return [
    route({
      method: 'POST',
      path: '/v1/requests/:id/replay',
      scope: 'admin',
      body: checkReplayRequest,
      handle: async ({ req, params, body, principal }) => {
        readQuery(req.query, []);
        return { body: await replay.replay(requestIdOf(params.id!), body.model, principal!) };
      },
    }),
  ];
}

export function requestLogRoutes(log: RequestLogPort): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/v1/requests',
      scope: 'admin',
      handle: async ({ req }) => ({ body: await log.list(readFilter(req.query)) }),
    }),
    route({
      method: 'GET',
      path: '/v1/requests/:id',
      scope: 'admin',
      handle: async ({ req, params }) => {
        readQuery(req.query, []);
        const id = requestIdOf(params.id!);
        const entry = await log.get(id);
        if (entry === undefined) throw notLogged(id);
        return { body: entry };
      },
    }),
  ];
}
