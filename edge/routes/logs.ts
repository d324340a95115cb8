import { readQuery } from '../../protocol/query.ts';
import type { LogTail } from '../http/log-tail.ts';
import { route, type RouteDef } from '../http/router.ts';

// GET /v1/logs: the newest lines of the service's own log, for `switchyard logs` and the dashboard. The log
// never holds a header, a body or a secret; it does name routes, models and token IDs, so reading it is `admin`.

export const LOG_QUERY = ['limit', 'after'] as const;

export function logRoutes(tail: LogTail): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/v1/logs',
      scope: 'admin',
      handle: ({ req }) => {
        const q = readQuery(req.query, LOG_QUERY);
        const limit = q.int('limit', 1, 1000, 100);
        const after = q.int('after', 0, Number.MAX_SAFE_INTEGER, -1);
        const read = tail.read(after === -1 ? null : after, limit);
        const data = read.lines.map(({ seq, line }) => {
          let entry: unknown;
          try {
            entry = JSON.parse(line);
          } catch {
            entry = { msg: line };
          }
          return { seq, entry };
        });
        return {
          body: { data, lastSeq: read.lastSeq, oldestSeq: read.oldestSeq, hasMore: read.hasMore, lost: read.lost },
        };
      },
    }),
  ];
}
