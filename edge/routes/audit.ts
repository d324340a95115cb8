import {
  AUDIT_ACTIONS,
  AUDIT_ACTOR_TYPES,
  AUDIT_QUERY_PARAMS,
  AUDIT_RESOURCE_TYPES,
} from '../../protocol/http/audit.ts';
import { ServiceError } from '../../protocol/errors.ts';
import { readQuery } from '../../protocol/query.ts';
import type { AuditRepo } from '../../store/audit-repo.ts';
import { route, type RouteDef } from '../http/router.ts';

export function auditRoutes(audit: AuditRepo): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/v1/audit-events',
      scope: 'read',
      handle: ({ req }) => {
        // Every filter is validated before the store is touched.
        const q = readQuery(req.query, AUDIT_QUERY_PARAMS);
        const filter = {
          action: q.oneOf('action', AUDIT_ACTIONS),
          resourceType: q.oneOf('resourceType', AUDIT_RESOURCE_TYPES),
          resourceId: q.string('resourceId', 256),
          actorType: q.oneOf('actorType', AUDIT_ACTOR_TYPES),
          actorId: q.string('actorId', 256),
          requestId: q.string('requestId', 256),
          createdAfter: q.dateTime('createdAfter'),
          createdBefore: q.dateTime('createdBefore'),
          limit: q.int('limit', 1, 500, 100),
        };
        if (
          filter.createdAfter !== undefined &&
          filter.createdBefore !== undefined &&
          filter.createdAfter > filter.createdBefore
        ) {
          throw new ServiceError('INVALID_REQUEST', '`createdAfter` must not be later than `createdBefore`.', {
            param: 'createdAfter',
          });
        }
        const page = audit.query(filter);
        return { body: { data: page.data, hasMore: page.hasMore } };
      },
    }),
  ];
}
