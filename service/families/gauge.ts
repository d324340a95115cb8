import { evaluatingAfterRefresh, createGaugeAlerts } from '../../control/gauge/alerts.ts';
import { authSessionOptionsFromEnv, createAuthSessions } from '../../control/gauge/auth-sessions.ts';
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
import { gaugeDataRepo } from '../../store/gauge-data-repo.ts';
import { gaugeSourceRepo } from '../../store/gauge-source-repo.ts';
import { usageRepo } from '../../store/usage-repo.ts';
import { createGaugeActor, gaugeOptionsFromEnv } from '../../workers/gauge/actor.ts';
import type { Family } from '../family.ts';
import type { Parts } from '../parts.ts';
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

// Gauge's parts, each built in a few lines, in the order they need each other.
/**
 * Gauge: its worker owns collection; the main thread keeps setup (sources, accounts), budgets, alerts and
 * device-flow sessions, and reads what was collected from LMDB.
 */
export async function gaugeFamily(p: Parts): Promise<Family> {
  const { env, audit, log, dataDir } = p;
  const gaugeSettings = () => p.settings.current().gauge;
  // Alerts evaluate as soon as a scheduled collection has committed new readings.
  p.gauge = createGaugeActor({
    dataDir,
    log,
    ...gaugeOptionsFromEnv(),
    onCollected: () => void p.gaugeAlerts?.evaluateQuietly(),
  });
  // The refresh that turning Gauge on starts (below) ends before the alerts close: it evaluates them when it is
  // done, and a stop right after turning Gauge on left the test process with nothing to wait on but it. The
  // worker closes first: that aborts the refresh's collections at once, where waiting for them took up to their
  // time limit (15 s) for a source that answers slowly or not at all.
  let closing = false;
  let turningOn: Promise<unknown> = Promise.resolve();
  const close = async () => {
    closing = true;
    await p.authSessions?.close();
    await p.gauge.close();
    await turningOn;
    await p.gaugeAlerts?.close();
  };
  try {
    p.gaugeSources = gaugeSourceRepo(env);
    p.gaugeData = gaugeDataRepo(env);
    await p.gaugeSources.ensureBuiltIns(Date.now());
    const rekeyed = await p.gaugeData.upgradeKeys();
    if (rekeyed > 0) log.info({ rekeyed }, 'rewrote Gauge history and activity keys of the first store layout');
    // Budget statuses come from the meter's usage (and Gauge readings while Gauge is on); a write re-evaluates alerts.
    p.gaugeBudgets = createGaugeBudgets({
      env,
      repo: gaugeBudgetRepo(env),
      audit,
      usage: usageRepo(env),
      readings: () => p.gaugeData.readings().map((r) => r.reading),
      gaugeEnabled: () => p.settings.current().gauge.enabled,
      providerExists: (id) => p.providerStore.all().some((record) => record.id === id),
      sources: p.gaugeSources,
      onChange: () => void p.gaugeAlerts.evaluateQuietly(),
    });
    // Alerts evaluate after each refresh a person asks for, before each events list, and on a timer (the
    // worker's scheduled refreshes).
    p.gaugeAlerts = createGaugeAlerts({
      env,
      repo: gaugeAlertRepo(env),
      data: p.gaugeData,
      sources: p.gaugeSources,
      audit,
      settings: gaugeSettings,
      budgets: (at) => p.gaugeBudgets.budgetStatuses(at),
      log,
      onEvent: (event) => void p.bus.publish('gauge.alert', event),
    });
    const actor = evaluatingAfterRefresh(
      refreshingCapacity(p.gauge, () => p.gaugeCapacity),
      p.gaugeAlerts,
    );
    // Turned on (not started on): one refresh of every enabled source at once, so that readings show without
    // waiting for the schedule. A refresh asked for meanwhile waits for it rather than being refused (409).
    p.gaugeService = createGaugeService({
      env,
      sources: p.gaugeSources,
      data: p.gaugeData,
      vault: p.vault,
      audit,
      actor: { setupChanged: () => actor.setupChanged(), refresh: (ids) => turningOn.then(() => actor.refresh(ids)) },
      settings: gaugeSettings,
    });
    let wasEnabled: boolean | null = null;
    p.followSettings((next) => {
      p.gauge.configure(next.gauge.enabled, next.gauge.retentionDays);
      if (wasEnabled === false && next.gauge.enabled && !closing) {
        const ids = p.gaugeSources.all().flatMap((s) => (s.enabled ? [s.id] : []));
        turningOn = actor.refresh(ids).catch((err: unknown) => log.debug({ err }, 'Gauge refresh on turning on'));
      }
      wasEnabled = next.gauge.enabled;
    });
    // Device flows that connect Gauge accounts: in memory, ended on shutdown.
    p.authSessions = createAuthSessions({
      service: p.gaugeService,
      settings: gaugeSettings,
      log,
      ...authSessionOptionsFromEnv(),
    });
  } catch (err) {
    await close();
    throw err;
  }
  return {
    routes: () => [
      ...gaugeRoutes({
        service: p.control.port<GaugePort>('gauge', p.gaugeService, GAUGE_METHODS),
        sources: p.gaugeSources,
        data: p.gaugeData,
        settings: gaugeSettings,
      }),
      ...gaugeAuthSessionRoutes(
        p.control.port<GaugeAuthSessionsPort>('gauge-auth-sessions', p.authSessions, GAUGE_AUTH_SESSIONS_METHODS),
      ),
      ...gaugeAlertRoutes(
        p.control.port<GaugeAlertsPort>('gauge-alerts', p.gaugeAlerts, GAUGE_ALERTS_METHODS),
        gaugeSettings,
      ),
      ...gaugeBudgetRoutes(p.control.port<GaugeBudgetsPort>('gauge-budgets', p.gaugeBudgets, GAUGE_BUDGETS_METHODS)),
      ...gaugeInsightRoutes({
        data: p.gaugeData,
        sources: p.gaugeSources,
        activity: activityQuery(env),
        flushServiceActivity: () => p.serviceActivity.flush(),
        signal: p.gaugeCapacity,
        catalog: () => p.catalog.current(),
        settings: gaugeSettings,
      }),
    ],
    ready: () => p.gaugeAlerts.start(),
    close,
  };
}
