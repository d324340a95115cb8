import { evaluatingAfterRefresh, createGaugeAlerts, type GaugeAlerts } from '../../control/gauge/alerts.ts';
import { authSessionOptionsFromEnv, createAuthSessions, type AuthSessions } from '../../control/gauge/auth-sessions.ts';
import { createGaugeBudgets } from '../../control/gauge/budgets.ts';
import { refreshingCapacity } from '../../control/gauge/capacity-signal.ts';
import { createGaugeService } from '../../control/gauge/service.ts';
import { gaugeAlertRoutes } from '../../edge/routes/gauge-alerts.ts';
import { gaugeAuthSessionRoutes } from '../../edge/routes/gauge-auth-sessions.ts';
import { gaugeBudgetRoutes } from '../../edge/routes/gauge-budgets.ts';
import { gaugeInsightRoutes } from '../../edge/routes/gauge-insights.ts';
import { gaugeRoutes } from '../../edge/routes/gauge.ts';
import { activityQuery } from '../../store/gauge-activity.ts';
import { gaugeAlertRepo } from '../../store/gauge-alert-repo.ts';
import { gaugeBudgetRepo } from '../../store/gauge-budget-repo.ts';
import { gaugeDataRepo, type GaugeDataRepo } from '../../store/gauge-data-repo.ts';
import { gaugeSourceRepo, type GaugeSourceRepo } from '../../store/gauge-source-repo.ts';
import { usageRepo } from '../../store/usage-repo.ts';
import { createGaugeActor, gaugeOptionsFromEnv, type GaugeActor } from '../../workers/gauge/actor.ts';
import type { Built, Family } from '../family.ts';
import type { Base, LateParts } from '../parts.ts';
import type { EventsParts } from './events.ts';
import type { SettingsParts } from './settings.ts';
import type { StoreParts } from './store.ts';
import {
  GAUGE_ALERTS_METHODS,
  GAUGE_AUTH_SESSIONS_METHODS,
  GAUGE_BUDGETS_METHODS,
  GAUGE_METHODS,
  type GaugeAlertsPort,
  type GaugeAuthSessionsPort,
  type GaugeBudgetsPort,
  type GaugePort,
} from '../../protocol/ports/gauge.ts';

export interface GaugeParts {
  gauge: GaugeActor;
  gaugeSources: GaugeSourceRepo;
  gaugeData: GaugeDataRepo;
}

type GaugeDeps = Base & StoreParts & EventsParts & SettingsParts;
type GaugeLate = Pick<LateParts, 'catalog' | 'gaugeCapacity' | 'serviceActivity'>;

/** What Gauge's close reads, set as its start goes: a start that fails part way closes what it opened. */
interface GaugeState {
  closing: boolean;
  turningOn: Promise<unknown>;
  alerts?: GaugeAlerts;
  sessions?: AuthSessions;
}

/**
 * Gauge: its worker owns collection; the main thread keeps setup (sources, accounts), budgets, alerts and
 * device-flow sessions, and reads what was collected from LMDB.
 */
export async function gaugeFamily(p: GaugeDeps, late: GaugeLate): Promise<Built<GaugeParts>> {
  const { env, log, dataDir } = p;
  const state: GaugeState = { closing: false, turningOn: Promise.resolve() };
  // Alerts evaluate as soon as a scheduled collection has committed new readings.
  const gauge = createGaugeActor({
    dataDir,
    log,
    ...gaugeOptionsFromEnv(),
    onCollected: () => void state.alerts?.evaluateQuietly(),
  });
  // The refresh that turning Gauge on starts (openGauge) ends before the alerts close: it evaluates them when it
  // is done, and a stop right after turning Gauge on left the test process with nothing to wait on but it. The
  // worker closes first: that aborts the refresh's collections at once, where waiting for them took up to their
  // time limit (15 s) for a source that answers slowly or not at all.
  const close = async () => {
    state.closing = true;
    await state.sessions?.close();
    await gauge.close();
    await state.turningOn;
    await state.alerts?.close();
  };
  let opened: Awaited<ReturnType<typeof openGauge>>;
  try {
    opened = await openGauge(p, late, gauge, state);
  } catch (err) {
    await close();
    throw err;
  }
  const { gaugeSources, gaugeData, gaugeService, authSessions, gaugeAlerts, gaugeBudgets } = opened;
  const gaugeSettings = () => p.settings.current().gauge;
  const family: Family = {
    routes: () => [
      ...gaugeRoutes({
        service: p.control.port<GaugePort>('gauge', gaugeService, GAUGE_METHODS),
        sources: gaugeSources,
        data: gaugeData,
        settings: gaugeSettings,
      }),
      ...gaugeAuthSessionRoutes(
        p.control.port<GaugeAuthSessionsPort>('gauge-auth-sessions', authSessions, GAUGE_AUTH_SESSIONS_METHODS),
      ),
      ...gaugeAlertRoutes(
        p.control.port<GaugeAlertsPort>('gauge-alerts', gaugeAlerts, GAUGE_ALERTS_METHODS),
        gaugeSettings,
      ),
      ...gaugeBudgetRoutes(p.control.port<GaugeBudgetsPort>('gauge-budgets', gaugeBudgets, GAUGE_BUDGETS_METHODS)),
      ...gaugeInsightRoutes({
        data: gaugeData,
        sources: gaugeSources,
        activity: activityQuery(env),
        flushServiceActivity: () => late.serviceActivity.get().flush(),
        signal: late.gaugeCapacity.get(),
        catalog: () => late.catalog.get().current(),
        settings: gaugeSettings,
      }),
    ],
    ready: () => gaugeAlerts.start(),
    close,
  };
  return { family, parts: { gauge, gaugeSources, gaugeData } };
}

// Gauge's parts, each built in a few lines, in the order they need each other.
async function openGauge(p: GaugeDeps, late: GaugeLate, gauge: GaugeActor, state: GaugeState) {
  const { env, audit, log } = p;
  const gaugeSettings = () => p.settings.current().gauge;
  const gaugeSources = gaugeSourceRepo(env);
  const gaugeData = gaugeDataRepo(env);
  await gaugeSources.ensureBuiltIns(Date.now());
  const rekeyed = await gaugeData.upgradeKeys();
  if (rekeyed > 0) log.info({ rekeyed }, 'rewrote Gauge history and activity keys of the first store layout');
  // Budget statuses come from the meter's usage (and Gauge readings while Gauge is on); a write re-evaluates alerts.
  const gaugeBudgets = createGaugeBudgets({
    env,
    repo: gaugeBudgetRepo(env),
    audit,
    usage: usageRepo(env),
    readings: () => gaugeData.readings().map((r) => r.reading),
    gaugeEnabled: () => p.settings.current().gauge.enabled,
    providerExists: (id) => p.providerStore.all().some((record) => record.id === id),
    sources: gaugeSources,
    onChange: () => void gaugeAlerts.evaluateQuietly(),
  });
  // Alerts evaluate after each refresh a person asks for, before each events list, and on a timer (the
  // worker's scheduled refreshes).
  const gaugeAlerts = (state.alerts = createGaugeAlerts({
    env,
    repo: gaugeAlertRepo(env),
    data: gaugeData,
    sources: gaugeSources,
    audit,
    settings: gaugeSettings,
    budgets: (at) => gaugeBudgets.budgetStatuses(at),
    log,
    onEvent: (event) => void p.bus.publish('gauge.alert', event),
  }));
  const actor = evaluatingAfterRefresh(
    refreshingCapacity(gauge, () => late.gaugeCapacity.get()),
    gaugeAlerts,
  );
  // Turned on (not started on): one refresh of every enabled source at once, so that readings show without
  // waiting for the schedule. A refresh asked for meanwhile waits for it rather than being refused (409).
  const gaugeService = createGaugeService({
    env,
    sources: gaugeSources,
    data: gaugeData,
    vault: p.vault,
    audit,
    actor: {
      setupChanged: () => actor.setupChanged(),
      refresh: (ids) => state.turningOn.then(() => actor.refresh(ids)),
    },
    settings: gaugeSettings,
  });
  let wasEnabled: boolean | null = null;
  p.followSettings((next) => {
    gauge.configure(next.gauge.enabled, next.gauge.retentionDays);
    if (wasEnabled === false && next.gauge.enabled && !state.closing) {
      const ids = gaugeSources.all().flatMap((s) => (s.enabled ? [s.id] : []));
      state.turningOn = actor.refresh(ids).catch((err: unknown) => log.debug({ err }, 'Gauge refresh on turning on'));
    }
    wasEnabled = next.gauge.enabled;
  });
  // Device flows that connect Gauge accounts: in memory, ended on shutdown.
  const authSessions = (state.sessions = createAuthSessions({
    service: gaugeService,
    settings: gaugeSettings,
    log,
    ...authSessionOptionsFromEnv(),
  }));
  return { gaugeSources, gaugeData, gaugeBudgets, gaugeAlerts, gaugeService, authSessions };
}
