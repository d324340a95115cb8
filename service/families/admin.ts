import { auditRoutes } from '../../edge/routes/audit.ts';
import { dashboardRoutes } from '../../edge/routes/dashboard.ts';
import { logRoutes } from '../../edge/routes/logs.ts';
import { processRoutes } from '../../edge/routes/process.ts';
import type { Built } from '../family.ts';
import type { Base } from '../parts.ts';
import type { StoreParts } from './store.ts';

/** The service itself: health and version, the dashboard's files, the audit log and the service's own log. */
export function adminFamily(p: Base & StoreParts): Built<Record<never, never>> {
  return {
    family: {
      routes: () => [
        ...processRoutes(() => p.isDraining(), p.edge),
        ...dashboardRoutes(),
        ...auditRoutes(p.audit),
        ...logRoutes(p.logTail),
      ],
    },
    parts: {},
  };
}
