import { createLimits } from '../../control/limits.ts';
import { limitRoutes } from '../../edge/routes/limits.ts';
import { limitRepo } from '../../store/limit-repo.ts';
import type { Family } from '../family.ts';
import type { Parts } from '../parts.ts';

const exists = async (read: () => unknown): Promise<boolean> => {
  try {
    await read();
    return true;
  } catch {
    return false;
  }
};

/** Enforced limits: their records, their counters, and what the gateway's admission reads (admission.ts). */
export function limitsFamily(p: Parts): Family {
  p.limits = createLimits({
    env: p.env,
    repo: limitRepo(p.env),
    audit: p.audit,
    bus: p.bus,
    log: p.log,
    now: p.now,
    onRefusal: (metric) => p.metrics.limitRefused(metric),
    // Route packs are read when a limit is made; the gateway family, which holds them, has started by then.
    scopeExists: (kind, id) =>
      kind === 'token'
        ? exists(() => p.tokens.get(id))
        : kind === 'service_account'
          ? exists(() => p.serviceAccounts.get(id))
          : exists(() => p.smartRoute.smart.packs.get(id)),
  });
  return { routes: () => limitRoutes(p.limits), close: () => p.limits.close() };
}
