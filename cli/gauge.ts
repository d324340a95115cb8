import type { GaugeReading, GaugeWindow } from '../protocol/gauge.ts';
import { GAUGE_ACCOUNT_ADAPTERS, GAUGE_PROVIDERS } from '../protocol/gauge-catalog.ts';
import type { DeletedAnswer, ListAnswer, PageAnswer } from '../protocol/http/answers.ts';
import type { GaugeAccountSummary, GaugeRefreshResult, GaugeSourceSummary } from '../protocol/http/gauge.ts';
import type { SettingsView } from '../protocol/http/settings.ts';
import { CliError, type Client, EXIT } from './client.ts';
import { cell, count, relative, table, usd, say, printJson, path } from './output.ts';
import { readSecret } from './secret.ts';
import { withArticle } from '../protocol/words.ts';

// Gauge from the command line: a compact status (each account's windows as used/limit, the share used and when
// it resets), connecting an account with its key (hidden prompt or stdin, as `providers add`), turning the
// built-in sources on and off, collecting now. The key goes to the service's vault and is never printed.

interface Row {
  account: string;
  provider: string;
  state: string;
  window: string;
  used: string;
  pct: string;
  resets: string;
}

/** What a row is made from: an account, or the provider record of readings that belong to none (gaugeStatus). */
type AccountHead = Pick<GaugeAccountSummary, 'id' | 'providerId' | 'enabled'> & {
  label: string | null;
  status?: Partial<GaugeAccountSummary['status']>;
};

/** The account's state in a word or two: what collects, what waits for a key, what failed. */
function stateOf(a: AccountHead): string {
  if (!a.enabled) return 'disabled';
  if (a.status?.auth === 'missing') return 'no key';
  if (a.status?.auth === 'failed') return 'key refused';
  return (
    ({ never: 'not yet read', ok: 'ok', failing: 'failing', disabled: 'disabled' } as Record<string, string>)[
      a.status?.collection as string
    ] ?? String(a.status?.collection ?? '')
  );
}

/** `40%`; below 10, one decimal, so that 1 of 500 is not 0%. */
const percent = (p: number) => `${p > 0 && p < 10 ? p.toFixed(1) : Math.round(p)}%`;

const figure = (n: number | null | undefined, money: boolean) => (money ? usd(n) : count(n));

function windowRow(w: GaugeWindow): Pick<Row, 'window' | 'used' | 'pct' | 'resets'> {
  const money = w.kind === 'spend' || w.kind === 'credits';
  const used = w.used ?? (w.limit !== null && w.remaining !== null ? w.limit - w.remaining : null);
  const share =
    typeof w.utilization === 'number'
      ? w.utilization
      : typeof used === 'number' && typeof w.limit === 'number' && w.limit > 0
        ? used / w.limit
        : null;
  return {
    window: w.period ? `${w.id} (${w.period})` : w.id,
    // A window without a limit shows its figure alone.
    used: w.limit === null ? figure(used, money) : `${figure(used, money)} / ${figure(w.limit, money)}`,
    pct: share === null ? '' : percent(share * 100),
    resets: w.resetsAt ? relative(w.resetsAt) : '',
  };
}

function rowsOf(account: AccountHead, reading: GaugeReading | undefined): Row[] {
  const head = {
    account: account.label ? `${account.id} (${account.label})` : account.id,
    provider: account.providerId,
  };
  const state = stateOf(account);
  const parts: Pick<Row, 'window' | 'used' | 'pct' | 'resets'>[] = (reading?.windows ?? []).map(windowRow);
  const spend = reading?.spend;
  if (spend && (spend.providerReported !== null || spend.estimated !== null)) {
    const reported = spend.providerReported ?? spend.estimated;
    parts.push({
      window: 'spend',
      used: `${usd(reported)}${spend.providerReported === null ? ' (estimated)' : ''}`,
      pct: '',
      resets: spend.periodEnd ? relative(spend.periodEnd) : '',
    });
  }
  if (reading?.credits) {
    const c = reading.credits;
    parts.push({
      window: 'credits left',
      used: c.total === null ? usd(c.remaining) : `${usd(c.remaining)} / ${usd(c.total)}`,
      pct: '',
      resets: '',
    });
  }
  if (parts.length === 0)
    parts.push({ window: reading ? 'no figures' : 'no reading yet', used: '', pct: '', resets: '' });
  // Later rows of the same account leave its columns blank (a space: an empty cell would print "-").
  return parts.map((p, i) => (i === 0 ? { ...head, state, ...p } : { account: ' ', provider: ' ', state: ' ', ...p }));
}

/** `gauge`: every account and its latest reading. */
export async function gaugeStatus(client: Client, json: boolean): Promise<number> {
  const [accounts, readings] = await Promise.all([
    client.call<ListAnswer<GaugeAccountSummary>>('GET', '/v1/gauge/accounts'),
    client.call<PageAnswer<GaugeReading> & { enabled: boolean }>('GET', '/v1/gauge/readings?limit=200'),
  ]);
  if (json) return (printJson({ enabled: readings.enabled, accounts: accounts.data, readings: readings.data }), 0);
  if (!readings.enabled) say('Gauge is off: nothing is collected. Turn it on with `switchyard gauge on`.\n');
  const latest = new Map<string, GaugeReading>();
  for (const r of readings.data) if (!latest.has(r.accountId)) latest.set(r.accountId, r);
  const rows = accounts.data.flatMap((a) => rowsOf(a, latest.get(a.id)));
  // Readings of no account: the rate-limit headers of relayed answers, one per provider record.
  const known = new Set(accounts.data.map((a) => a.id));
  for (const [id, reading] of latest) {
    if (known.has(id)) continue;
    const source: AccountHead = {
      id,
      label: null,
      providerId: reading.providerId,
      enabled: true,
      status: { collection: 'ok' },
    };
    rows.push(...rowsOf(source, reading).map((r, i) => (i === 0 ? { ...r, state: 'from answers' } : r)));
  }
  process.stdout.write(
    table<Row>(
      rows,
      [
        { header: 'ACCOUNT', value: (r) => r.account },
        { header: 'PROVIDER', value: (r) => r.provider },
        { header: 'STATE', value: (r) => r.state },
        { header: 'WINDOW', value: (r) => r.window },
        { header: 'USED / LIMIT', value: (r) => r.used || ' ', right: true },
        { header: 'USED %', value: (r) => r.pct || ' ', right: true },
        { header: 'RESETS', value: (r) => r.resets || ' ' },
      ],
      'No Gauge accounts. Connect one with `switchyard gauge accounts add <provider>`.',
    ),
  );
  return 0;
}

/** `gauge on|off`: the `gauge.enabled` setting. */
export async function gaugeSwitch(client: Client, json: boolean, enabled: boolean): Promise<number> {
  const settings = await client.call<SettingsView>('PATCH', '/v1/settings', { gauge: { enabled } });
  if (json) return (printJson(settings.gauge), 0);
  say(settings.gauge.enabled ? 'Gauge is on: enabled sources are collected.' : 'Gauge is off: nothing is collected.');
  return 0;
}

/** The providers an account can be connected to with a key, as `provider (auth mode)`. */
const KEY_ADAPTERS = GAUGE_ACCOUNT_ADAPTERS.map((a) => a.providerId);

export interface AccountAdd {
  provider: string;
  label?: string;
  baseUrl?: string;
}

/** `gauge accounts add <provider>`: the key from a hidden prompt on a terminal, else from stdin. */
export async function addGaugeAccount(client: Client, json: boolean, o: AccountAdd): Promise<number> {
  const adapter = GAUGE_ACCOUNT_ADAPTERS.find((a) => a.providerId === o.provider);
  if (adapter === undefined)
    throw new CliError(
      `Gauge cannot connect "${o.provider}" with a key. Providers: ${KEY_ADAPTERS.join(', ')}.`,
      EXIT.usage,
    );
  const name = GAUGE_PROVIDERS.find((p) => p.id === o.provider)?.displayName ?? o.provider;
  const kind = adapter.authMode === 'admin_key' ? 'Admin key' : 'API key';
  const credential = await readSecret(`${kind} for ${name}${o.label ? ` (${cell(o.label)})` : ''}: `);
  if (credential === null)
    throw new CliError(
      `${withArticle(name, true)} account needs its ${kind.toLowerCase()}: type it at the prompt, or pipe it in ` +
        'on stdin.',
      EXIT.usage,
    );
  const account = await client.call<GaugeAccountSummary>('POST', '/v1/gauge/accounts', {
    providerId: adapter.providerId,
    authMode: adapter.authMode,
    credential,
    ...(o.label !== undefined && { label: o.label }),
    ...(o.baseUrl !== undefined && { config: { baseUrl: o.baseUrl } }),
  });
  if (json) return (printJson(account), 0);
  say(`Connected ${account.id} (${name}, ${cell(account.label)}), its key stored in the vault.`);
  say('It is read at the next collection, or now with `switchyard gauge refresh`.');
  return 0;
}

export async function removeGaugeAccount(client: Client, json: boolean, id: string): Promise<number> {
  const answer = await client.call<DeletedAnswer>('DELETE', `/v1/gauge/accounts/${path(id)}`);
  if (json) return (printJson(answer), 0);
  say(`Removed Gauge account ${answer.id}, its readings and its key.`);
  return 0;
}

export async function listGaugeSources(client: Client, json: boolean): Promise<number> {
  const answer = await client.call<ListAnswer<GaugeSourceSummary>>('GET', '/v1/gauge/sources');
  if (json) return (printJson(answer), 0);
  process.stdout.write(
    table(
      answer.data,
      [
        { header: 'ID', value: (s) => s.id },
        { header: 'KIND', value: (s) => s.kind.replace('_', ' ') },
        { header: 'PROVIDER', value: (s) => s.providerId },
        { header: 'LABEL', value: (s) => s.label },
        { header: 'ENABLED', value: (s) => (s.enabled ? 'yes' : 'no') },
      ],
      'No sources.',
    ),
  );
  return 0;
}

/** `gauge sources enable|disable <id>`. */
export async function enableGaugeSource(client: Client, json: boolean, id: string, enabled: boolean): Promise<number> {
  const source = await client.call<GaugeSourceSummary>('PUT', `/v1/gauge/sources/${path(id)}`, { enabled });
  if (json) return (printJson(source), 0);
  say(`Gauge source ${source.id} is ${source.enabled ? 'enabled' : 'disabled'}.`);
  return 0;
}

/** `gauge refresh [<source id>...]`: collects now; exit 1 when a source failed, with its reason. */
export async function refreshGauge(client: Client, json: boolean, ids: string[]): Promise<number> {
  const answer = await client.call<GaugeRefreshResult>(
    'POST',
    '/v1/gauge/refresh',
    ids.length > 0 ? { sourceIds: ids } : {},
  );
  const failed = answer.data.filter((o) => !o.ok);
  if (json) return (printJson(answer), failed.length > 0 ? EXIT.failed : 0);
  for (const o of answer.data) {
    // A count (GaugeRefreshOutcome); a list of readings would count as its length.
    const n = typeof o.readings === 'number' ? o.readings : ((o.readings as unknown[] | undefined)?.length ?? 0);
    if (o.ok) say(`${o.sourceId}: ok, ${n} reading${n === 1 ? '' : 's'}.`);
    else process.stderr.write(`${o.sourceId}: failed (${o.code ?? 'error'}): ${o.message ?? 'no reason given'}\n`);
  }
  if (answer.data.length === 0) say('No enabled source to collect.');
  return failed.length > 0 ? EXIT.failed : 0;
}
