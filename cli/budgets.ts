import {
  ALERT_RULE_KINDS,
  BUDGET_BASES,
  BUDGET_PERIODS,
  type GaugeAlertRule,
  type GaugeBudgetStatus,
} from '../protocol/gauge-money.ts';
import type { DeletedAnswer, ListAnswer } from '../protocol/http/answers.ts';
import type { GaugeAlertRuleList } from '../protocol/http/gauge-alerts.ts';
import { str, UsageError } from './args.ts';
import { readBodyFile } from './body-file.ts';
import type { Client } from './client.ts';
import { cell, relative, table, usd, say, printJson, path } from './output.ts';

// Gauge budgets and alert rules: listed, added from options or from a JSON or YAML file holding the API's
// create body (docs/api.md, Gauge budgets and Gauge alerts), removed by ID. Options are checked here for
// shape (a number is a number); what they mean (a provider that exists) is the service's to refuse, exit 1.

export type Flags = Record<string, string | boolean | undefined>;

function list(value: string | undefined): string[] | undefined {
  return value
    ?.split(',')
    .map((s) => s.trim())
    .filter(Boolean);
}

function number(value: string | undefined, name: string): number | undefined {
  if (value === undefined) return undefined;
  const n = /^\d+(\.\d+)?$/.test(value.trim()) ? Number(value) : NaN;
  if (!Number.isFinite(n)) throw new UsageError(`${name} takes a number, such as 20 or 2.5.`);
  return n;
}

export function oneOf(value: string | undefined, name: string, allowed: readonly string[]): string | undefined {
  if (value !== undefined && !allowed.includes(value))
    throw new UsageError(`${name} is one of: ${allowed.join(', ')}.`);
  return value;
}

/** The body from the file, or from the options; not both, and the options the API requires. */
export async function bodyOf(
  file: string | undefined,
  flags: Flags,
  required: string[],
  fromFlags: () => Record<string, unknown>,
  usage: string,
): Promise<Record<string, unknown>> {
  const given = Object.keys(flags).filter((k) => k !== 'json' && flags[k] !== undefined);
  if (file !== undefined) {
    if (given.length > 0) throw new UsageError(`Give a file or options, not both. Usage: ${usage}`);
    return readBodyFile(file);
  }
  const missing = required.filter((k) => flags[k] === undefined);
  if (missing.length > 0) throw new UsageError(`Missing ${missing.map((k) => `--${k}`).join(', ')}. Usage: ${usage}`);
  return fromFlags();
}

export const BUDGET_OPTIONS = {
  name: { type: 'string' },
  'limit-usd': { type: 'string' },
  period: { type: 'string' },
  basis: { type: 'string' },
  project: { type: 'string' },
  providers: { type: 'string' },
  accounts: { type: 'string' },
  thresholds: { type: 'string' },
} as const;

export const BUDGETS_USAGE =
  'switchyard budgets [list] | budgets add <file> | budgets add --name N --limit-usd X --period day|week|month ' +
  '[--basis estimated|provider_reported] [--project P] [--providers a,b] [--accounts a,b] [--thresholds 50,80,100] ' +
  '| budgets remove <id> [--json]';

export async function listBudgets(client: Client, json: boolean): Promise<number> {
  const answer = await client.call<ListAnswer<GaugeBudgetStatus>>('GET', '/v1/gauge/budgets');
  if (json) return (printJson(answer), 0);
  process.stdout.write(
    table(
      answer.data,
      [
        { header: 'ID', value: (b) => b.id },
        { header: 'NAME', value: (b) => b.name },
        { header: 'PERIOD', value: (b) => b.period },
        { header: 'SPENT / LIMIT', value: (b) => `${usd(b.spend?.counted)} / ${usd(b.amount)}`, right: true },
        {
          header: 'USED %',
          value: (b) => `${Math.round((100 * (b.spend?.counted ?? 0)) / b.amount)}%`,
          right: true,
        },
        { header: 'BASIS', value: (b) => b.basis.replace('_', ' ') },
        { header: 'STATE', value: (b) => b.state },
        { header: 'PERIOD ENDS', value: (b) => relative(b.periodEnd) },
      ],
      'No budgets. Add one: `switchyard budgets add --name N --limit-usd 20 --period month`.',
    ),
  );
  return 0;
}

export async function addBudget(
  client: Client,
  json: boolean,
  file: string | undefined,
  flags: Flags,
): Promise<number> {
  const body = await bodyOf(
    file,
    flags,
    ['name', 'limit-usd', 'period'],
    () => {
      const providerIds = list(str(flags.providers));
      const accountIds = list(str(flags.accounts));
      const thresholds = list(str(flags.thresholds))?.map((t) => {
        if (!/^\d+$/.test(t)) throw new UsageError('--thresholds takes whole percents, such as 50,80,100.');
        return Number(t);
      });
      return {
        name: str(flags.name),
        amount: number(str(flags['limit-usd']), '--limit-usd'),
        currency: 'USD',
        period: oneOf(str(flags.period), '--period', BUDGET_PERIODS),
        basis: oneOf(str(flags.basis), '--basis', BUDGET_BASES) ?? 'estimated',
        ...(flags.project !== undefined && { project: str(flags.project) }),
        ...((providerIds || accountIds) && {
          scope: { ...(providerIds && { providerIds }), ...(accountIds && { accountIds }) },
        }),
        ...(thresholds && { thresholds }),
      };
    },
    BUDGETS_USAGE,
  );
  const budget = await client.call<GaugeBudgetStatus>('POST', '/v1/gauge/budgets', body);
  if (json) return (printJson(budget), 0);
  say(
    `Added budget ${budget.id} (${cell(budget.name)}): ${usd(budget.amount)} a ${budget.period}, ` +
      `${usd(budget.spend.counted)} counted so far (${budget.basis.replace('_', ' ')}).`,
  );
  return 0;
}

export async function removeBudget(client: Client, json: boolean, id: string): Promise<number> {
  const answer = await client.call<DeletedAnswer>('DELETE', `/v1/gauge/budgets/${path(id)}`);
  if (json) return (printJson(answer), 0);
  say(`Removed budget ${answer.id}.`);
  return 0;
}

export const ALERT_OPTIONS = {
  name: { type: 'string' },
  kind: { type: 'string' },
  provider: { type: 'string' },
  account: { type: 'string' },
  budget: { type: 'string' },
  threshold: { type: 'string' },
  cooldown: { type: 'string' },
  disabled: { type: 'boolean' },
} as const;

export const ALERTS_USAGE =
  'switchyard alerts [list] | alerts add <file> | alerts add --name N --kind KIND [--provider ID] [--account ID] ' +
  '[--budget ID] [--threshold X] [--cooldown MINUTES] [--disabled] | alerts remove <id> [--json]';

const targetOf = (r: GaugeAlertRule) =>
  [
    r.target?.providerId && `provider ${r.target.providerId}`,
    r.target?.accountId && `account ${r.target.accountId}`,
    r.target?.budgetId && `budget ${r.target.budgetId}`,
  ]
    .filter(Boolean)
    .join(', ') || 'all';

export async function listAlertRules(client: Client, json: boolean): Promise<number> {
  const answer = await client.call<GaugeAlertRuleList>('GET', '/v1/gauge/alert-rules');
  if (json) return (printJson(answer), 0);
  process.stdout.write(
    table(
      answer.data,
      [
        { header: 'ID', value: (r) => r.id },
        { header: 'NAME', value: (r) => r.name },
        { header: 'KIND', value: (r) => r.kind },
        { header: 'TARGET', value: targetOf },
        { header: 'THRESHOLD', value: (r) => (r.threshold === null ? '' : String(r.threshold)), right: true },
        { header: 'ENABLED', value: (r) => (r.enabled ? 'yes' : 'no') },
        { header: 'COOLDOWN', value: (r) => `${r.cooldownMinutes} min`, right: true },
      ],
      'No alert rules. Add one: `switchyard alerts add --name N --kind quota_low --provider openai`.',
    ),
  );
  return 0;
}

export async function addAlertRule(
  client: Client,
  json: boolean,
  file: string | undefined,
  flags: Flags,
): Promise<number> {
  const body = await bodyOf(
    file,
    flags,
    ['name', 'kind'],
    () => {
      const target = {
        ...(flags.provider !== undefined && { providerId: str(flags.provider) }),
        ...(flags.account !== undefined && { accountId: str(flags.account) }),
        ...(flags.budget !== undefined && { budgetId: str(flags.budget) }),
      };
      const cooldown = number(str(flags.cooldown), '--cooldown');
      return {
        name: str(flags.name),
        kind: oneOf(str(flags.kind), '--kind', ALERT_RULE_KINDS),
        ...(Object.keys(target).length > 0 && { target }),
        ...(flags.threshold !== undefined && { threshold: number(str(flags.threshold), '--threshold') }),
        ...(cooldown !== undefined && { cooldownMinutes: cooldown }),
        ...(flags.disabled === true && { enabled: false }),
      };
    },
    ALERTS_USAGE,
  );
  const rule = await client.call<GaugeAlertRule>('POST', '/v1/gauge/alert-rules', body);
  if (json) return (printJson(rule), 0);
  const off = rule.enabled ? '' : ', disabled';
  say(`Added alert rule ${rule.id} (${cell(rule.name)}: ${rule.kind}, ${targetOf(rule)})${off}.`);
  return 0;
}

export async function removeAlertRule(client: Client, json: boolean, id: string): Promise<number> {
  const answer = await client.call<DeletedAnswer & { events: number }>('DELETE', `/v1/gauge/alert-rules/${path(id)}`);
  if (json) return (printJson(answer), 0);
  say(`Removed alert rule ${answer.id} and its ${answer.events} event${answer.events === 1 ? '' : 's'}.`);
  return 0;
}
