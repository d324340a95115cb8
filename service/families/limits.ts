import { join } from 'node:path';
import { createLimits } from '../../control/limits.ts';
import { limitRoutes } from '../../edge/routes/limits.ts';
import { limitRepo } from '../../store/limit-repo.ts';
import type { Built } from '../family.ts';
import type { Base, LateParts } from '../parts.ts';
import type { EventsParts } from './events.ts';
import type { GaugeParts } from './gauge.ts';
import type { ProvidersParts } from './providers.ts';
import type { SettingsParts } from './settings.ts';
import type { StoreParts } from './store.ts';
import type { TokensParts } from './tokens.ts';
import type { UsageParts } from './usage.ts';
import { isAccount } from '../../protocol/gauge-sources.ts';
import {
  LIMITS_METHODS,
  LOOP_BRAKE_METHODS,
  type LimitsPort,
  type LoopBrakePort,
} from '../../protocol/ports/limits.ts';

const exists = async (read: () => unknown): Promise<boolean> => {
  try {
    await read();
    return true;
  } catch {
    return false;
  }
};

/** A Gauge window's freshest reading as a percent used; null while Gauge is off or has no such reading. */
function gaugeShare(p: SettingsParts & GaugeParts, accountId: string, windowId: string) {
  if (!p.settings.current().gauge.enabled) return null;
  const window = p.gaugeData.reading(accountId)?.reading.windows.find((w) => w.id === windowId);
  if (window === undefined) return null;
  const share =
    window.utilization ??
    (window.used !== null && window.limit !== null && window.limit > 0 ? window.used / window.limit : null);
  if (share === null) return null;
  const resetsAt = window.resetsAt === null ? null : Date.parse(window.resetsAt);
  return { percent: share * 100, resetsAt: Number.isFinite(resetsAt) ? resetsAt : null };
}

export interface LimitsParts {
  limits: ReturnType<typeof createLimits>;
}

/** Enforced limits: their records, their counters, and what the gateway's admission reads (admission.ts). */
export function limitsFamily(
  p: Base & StoreParts & TokensParts & EventsParts & SettingsParts & GaugeParts & UsageParts & ProvidersParts,
  late: Pick<LateParts, 'smartRoute'>,
): Built<LimitsParts> {
  const limits = createLimits({
    env: p.env,
    repo: limitRepo(p.env),
    audit: p.audit,
    bus: p.bus,
    log: p.log,
    now: p.now,
    journalDir: join(p.dataDir, 'limit-journal'),
    onRefusal: (metric) => p.metrics.limitRefused(metric),
    gaugeShare: (accountId, windowId) => gaugeShare(p, accountId, windowId),
    gaugeAccountExists: (id) => {
      const source = p.gaugeSources.get(id);
      return source !== undefined && isAccount(source);
    },
    // Route packs are read when a limit is made; the gateway family, which holds them, has started by then.
    scopeExists: (kind, id) =>
      kind === 'token'
        ? exists(() => p.tokens.get(id))
        : kind === 'service_account'
          ? exists(() => p.serviceAccounts.get(id))
          : kind === 'credential'
            ? Promise.resolve(p.providers.credentialOwner(id) !== undefined)
            : exists(() => late.smartRoute.get().smart.packs.get(id)),
  });
  const routes = () =>
    limitRoutes({
      ...p.control.port<Omit<LimitsPort, 'brake'>>('limits', limits, LIMITS_METHODS),
      brake: p.control.port<LoopBrakePort>('loop-brake', limits.brake, LOOP_BRAKE_METHODS),
    });
  return { family: { routes, close: () => limits.close() }, parts: { limits } };
}
