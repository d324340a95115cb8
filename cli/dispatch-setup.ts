import { intOption, options, positionals, str, UsageError } from './args.ts';
import {
  ALERT_OPTIONS,
  ALERTS_USAGE,
  addAlertRule,
  addBudget,
  BUDGET_OPTIONS,
  BUDGETS_USAGE,
  listAlertRules,
  listBudgets,
  removeAlertRule,
  removeBudget,
} from './budgets.ts';
import { connect } from './client.ts';
import { LIMITS_HELP, LIMITS_USAGE, limitsCommand } from './limits.ts';
import { addPreset, addRoutePack, listPresets, listRoutePacks, removePreset, removeRoutePack } from './config-files.ts';
import {
  addGaugeAccount,
  enableGaugeSource,
  gaugeStatus,
  gaugeSwitch,
  listGaugeSources,
  refreshGauge,
  removeGaugeAccount,
} from './gauge.ts';
import { services } from './listing.ts';
import { addService, removeService, startService, stopService } from './services-manage.ts';

// The set-up commands beyond providers, models and tokens: presets and route packs from files, Gauge and its
// budgets and alert rules, enforced limits (cli/limits.ts), supervised services. Parsed here as cli/index.ts
// parses the others (strict options, usage errors exit 2), each handled by its own file.

export const SETUP_COMMANDS = ['presets', 'route-packs', 'gauge', 'budgets', 'alerts', 'limits', 'services'] as const;
export type SetupCommand = (typeof SETUP_COMMANDS)[number];

export const SETUP_HELP = `  presets    List presets.                                          [--json]
  presets add <file> | presets remove <slug>
             Add a preset from a JSON or YAML file (the body of POST /v1/presets), or remove one.
  route-packs
             List route packs.                                      [--json]
  route-packs add <file> | route-packs remove <slug>
             Add a route pack from a JSON or YAML file (the body of POST /v1/route-packs), or remove one.
  gauge      Each Gauge account's windows: used / limit, % used, when it resets.
                                                                    [--json]
  gauge on|off
             Turn Gauge's collection on or off.
  gauge accounts add <provider> | gauge accounts remove <id>
             Connect an account (openai, anthropic, openrouter, github-copilot); its key is asked for (input
             hidden) or read from stdin.                            [--json] [--label L] [--base-url URL]
  gauge sources | gauge sources enable|disable <id>
             List Gauge's sources; turn one on or off (claude-code, codex, status pages...).
  gauge refresh [<source id>...]
             Collect now; says what failed.                         [--json]
  budgets    List budgets with this period's spend.                 [--json]
  budgets add --name N --limit-usd X --period day|week|month | budgets add <file> | budgets remove <id>
             Add a budget from options or a JSON or YAML file (the body of POST /v1/gauge/budgets).
             [--basis estimated|provider_reported] (default estimated) [--project P] [--providers a,b]
             [--accounts a,b] [--thresholds 50,80,100]
  alerts     List alert rules.                                      [--json]
  alerts add --name N --kind KIND | alerts add <file> | alerts remove <id>
             Add an alert rule from options or a JSON or YAML file (the body of POST /v1/gauge/alert-rules).
             KIND: quota_low, quota_exhausted, quota_reset, forecast_exhaustion, budget_threshold, spend_drift,
             provider_incident, collection_failing, reauth_required.
             [--provider ID] [--account ID] [--budget ID] [--threshold X] [--cooldown MINUTES] [--disabled]
${LIMITS_HELP}
  services   List supervised runtimes (llama-server, embedded).     [--json]
  services add llamacpp --model <id>
             Add a supervised llama-server for a library model (\`switchyard models\`); it starts unless
             --no-start.                                            [--json] [--id ID] [--name N] [--port N]
  services start|stop|remove <id>
             Start one (a progress bar until it answers), stop it, or remove it.`;

const PRESETS_USAGE = 'switchyard presets [list] | presets add <file> | presets remove <slug> [--json]';
const PACKS_USAGE = 'switchyard route-packs [list] | route-packs add <file> | route-packs remove <slug> [--json]';
const GAUGE_USAGE =
  'switchyard gauge | gauge on|off | gauge accounts add <provider> [--label L] [--base-url URL] | ' +
  'gauge accounts remove <id> | gauge sources [enable|disable <id>] | gauge refresh [<source id>...] [--json]';
const SERVICES_USAGE =
  'switchyard services | services add llamacpp --model <id> [--id ID] [--name N] [--port N] [--no-start] | ' +
  'services start|stop|remove <id> [--json]';

/** Each command's usage line, for the message of a bad option (cli/index.ts). */
export const SETUP_USAGES: Record<(typeof SETUP_COMMANDS)[number], string> = {
  presets: PRESETS_USAGE,
  'route-packs': PACKS_USAGE,
  gauge: GAUGE_USAGE,
  budgets: BUDGETS_USAGE,
  alerts: ALERTS_USAGE,
  limits: LIMITS_USAGE,
  services: SERVICES_USAGE,
};

/** list / add <file> / remove <id>, as presets and route packs take them. */
async function fileCommand(
  args: string[],
  usage: string,
  list: (json: boolean) => Promise<number>,
  add: (json: boolean, file: string) => Promise<number>,
  remove: (json: boolean, id: string) => Promise<number>,
): Promise<number> {
  const o = options(args);
  const [sub, target] = positionals(o.positionals, 2, usage);
  const json = o.values.json === true;
  if (sub === undefined || (sub === 'list' && target === undefined)) return list(json);
  if (sub === 'add' && target !== undefined) return add(json, target);
  if (sub === 'remove' && target !== undefined) return remove(json, target);
  throw new UsageError(`Usage: ${usage}`);
}

async function gauge(args: string[]): Promise<number> {
  const o = options(args, { label: { type: 'string' }, 'base-url': { type: 'string' } });
  const [sub, verb, target, ...rest] = o.positionals;
  const json = o.values.json === true;
  const setupOptions = o.values.label !== undefined || o.values['base-url'] !== undefined;
  if (setupOptions && !(sub === 'accounts' && verb === 'add'))
    throw new UsageError(`--label and --base-url are for \`gauge accounts add\`. Usage: ${GAUGE_USAGE}`);
  if (sub === 'refresh') return refreshGauge(connect(), json, o.positionals.slice(1));
  if (rest.length > 0) throw new UsageError(`Too many arguments. Usage: ${GAUGE_USAGE}`);
  if (sub === undefined) return gaugeStatus(connect(), json);
  if ((sub === 'on' || sub === 'off') && verb === undefined) return gaugeSwitch(connect(), json, sub === 'on');
  if (sub === 'accounts' && verb === 'add' && target !== undefined)
    return addGaugeAccount(connect(), json, {
      provider: target,
      label: str(o.values.label),
      baseUrl: str(o.values['base-url']),
    });
  if (sub === 'accounts' && verb === 'remove' && target !== undefined)
    return removeGaugeAccount(connect(), json, target);
  if (sub === 'sources' && verb === undefined) return listGaugeSources(connect(), json);
  if (sub === 'sources' && (verb === 'enable' || verb === 'disable') && target !== undefined)
    return enableGaugeSource(connect(), json, target, verb === 'enable');
  throw new UsageError(`Usage: ${GAUGE_USAGE}`);
}

async function budgetsOrAlerts(args: string[], which: 'budgets' | 'alerts'): Promise<number> {
  const budgets = which === 'budgets';
  const usage = budgets ? BUDGETS_USAGE : ALERTS_USAGE;
  const o = options(args, budgets ? BUDGET_OPTIONS : ALERT_OPTIONS);
  const [sub, target] = positionals(o.positionals, 2, usage);
  const json = o.values.json === true;
  const { json: _json, ...flags } = o.values;
  const flagged = Object.values(flags).some((v) => v !== undefined);
  if (flagged && sub !== 'add') throw new UsageError(`Those options are for \`${which} add\`. Usage: ${usage}`);
  if (sub === undefined || (sub === 'list' && target === undefined))
    return budgets ? listBudgets(connect(), json) : listAlertRules(connect(), json);
  if (sub === 'add')
    return budgets ? addBudget(connect(), json, target, flags) : addAlertRule(connect(), json, target, flags);
  if (sub === 'remove' && target !== undefined)
    return budgets ? removeBudget(connect(), json, target) : removeAlertRule(connect(), json, target);
  throw new UsageError(`Usage: ${usage}`);
}

async function servicesCommand(args: string[]): Promise<number> {
  const o = options(args, {
    model: { type: 'string' },
    id: { type: 'string' },
    name: { type: 'string' },
    port: { type: 'string' },
    'no-start': { type: 'boolean' },
  });
  const [sub, target] = positionals(o.positionals, 2, SERVICES_USAGE);
  const json = o.values.json === true;
  const { json: _json, ...flags } = o.values;
  if (sub !== 'add' && Object.values(flags).some((v) => v !== undefined))
    throw new UsageError(`Those options are for \`services add\`. Usage: ${SERVICES_USAGE}`);
  if (sub === undefined) return services(connect(), json);
  if (sub === 'add' && target !== undefined) {
    const model = str(o.values.model);
    if (model === undefined) throw new UsageError(`services add needs --model <id>. Usage: ${SERVICES_USAGE}`);
    const port = o.values.port === undefined ? undefined : intOption(str(o.values.port), '--port', 1024, 65535, 0);
    return addService(connect(), json, {
      kind: target,
      model,
      id: str(o.values.id),
      name: str(o.values.name),
      port,
      start: o.values['no-start'] !== true,
    });
  }
  if (sub === 'start' && target !== undefined) return startService(connect(), json, target);
  if (sub === 'stop' && target !== undefined) return stopService(connect(), json, target);
  if (sub === 'remove' && target !== undefined) return removeService(connect(), json, target);
  throw new UsageError(`Usage: ${SERVICES_USAGE}`);
}

export async function dispatchSetup(command: SetupCommand, args: string[]): Promise<number> {
  switch (command) {
    case 'presets':
      return fileCommand(
        args,
        PRESETS_USAGE,
        (json) => listPresets(connect(), json),
        (json, file) => addPreset(connect(), json, file),
        (json, id) => removePreset(connect(), json, id),
      );
    case 'route-packs':
      return fileCommand(
        args,
        PACKS_USAGE,
        (json) => listRoutePacks(connect(), json),
        (json, file) => addRoutePack(connect(), json, file),
        (json, id) => removeRoutePack(connect(), json, id),
      );
    case 'gauge':
      return gauge(args);
    case 'budgets':
    case 'alerts':
      return budgetsOrAlerts(args, command);
    case 'limits':
      return limitsCommand(args);
    case 'services':
      return servicesCommand(args);
  }
}
