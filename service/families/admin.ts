import { auditRoutes } from '../../edge/routes/audit.ts';
import { dashboardRoutes } from '../../edge/routes/dashboard.ts';
import { logRoutes } from '../../edge/routes/logs.ts';
import { processRoutes } from '../../edge/routes/process.ts';
import type { Family } from '../family.ts';
import type { Parts } from '../parts.ts';

/** The service itself: health and version, the dashboard's files, the audit log and the service's own log. */
export function adminFamily(p: Parts): Family {
  return {
    routes: () => [
      ...processRoutes(() => p.draining, p.edge),
      ...dashboardRoutes(),
      ...auditRoutes(p.audit),
      ...logRoutes(p.logTail),
    ],
  };
}
