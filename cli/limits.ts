import type { DeletedAnswer, ListAnswer } from '../protocol/http/answers.ts';
import type { LimitView, LoopBrake, PausedSession } from '../protocol/http/limits.ts';
import type { TokenView } from '../protocol/http/tokens.ts';
import { options, positionals, str, UsageError } from './args.ts';
import { bodyOf, type Flags, oneOf } from './budgets.ts';
import { CliError, connect, EXIT, type Client } from './client.ts';
import { cell, count, relative, table, usd, say, printJson, path } from './output.ts';

// Enforced limits (docs/api.md, Limits): listed with each one's use in its current window, added from options
// or from a JSON or YAML file holding the API's create body, changed (max, name, on or off), removed. Options
// are checked here for shape (a number is a number, a scope is one of the kinds); what they mean (a token that
// exists, a whole number of tokens) is the service's to refuse, exit 1, its message shown as it is.

/** protocol/http/limits.ts's LIMIT_WINDOWS (test/cli/limits.suite.ts keeps them equal): that module compiles
 * its schemas when loaded, which a command that only sends a body need not pay for. */
export const WINDOWS = ['minute', 'hour', 'day', 'week', 'month', 'gauge'] as const;
const TOKEN_KINDS = ['total', 'input', 'output'] as const;
/** How a scope is typed (`service-account:sa_1`), with the API's spelling accepted too. */
const SCOPE_KINDS: Record<string, string> = {
  token: 'token',
  'service-account': 'service_account',
  service_account: 'service_account',
  session: 'session',
  'route-pack': 'route_pack',
  route_pack: 'route_pack',
  credential: 'credential',
  service: 'service',
};
/** How many sessions of a per-session limit `limits` shows under it. */
const SESSIONS_SHOWN = 3;

export const LIMIT_OPTIONS = {
  name: { type: 'string' },
  scope: { type: 'string' },
  'token-name': { type: 'string' },
  window: { type: 'string' },
  max: { type: 'string' },
  usd: { type: 'boolean' },
  requests: { type: 'boolean' },
  tokens: { type: 'string' },
  disabled: { type: 'boolean' },
  enable: { type: 'boolean' },
  disable: { type: 'boolean' },
  gauge: { type: 'string' },
  'all-calls': { type: 'boolean' },
  on: { type: 'boolean' },
  off: { type: 'boolean' },
  repeats: { type: 'string' },
  seconds: { type: 'string' },
} as const;
const ADD_OPTIONS = [
  'name',
  'scope',
  'token-name',
  'window',
  'max',
  'usd',
  'requests',
  'tokens',
  'disabled',
  'gauge',
  'all-calls',
];
const SET_OPTIONS = ['name', 'max', 'enable', 'disable'];
const BRAKE_OPTIONS = ['on', 'off', 'repeats', 'seconds'];

export const LIMITS_USAGE =
  'switchyard limits [list] | limits add <file> | limits add --name N --scope SCOPE --window WINDOW --max X ' +
  '--usd|--requests|--tokens total|input|output [--disabled] | limits set <id> [--max X] [--name N] ' +
  '[--enable|--disable] | limits remove <id> | limits brake [--on|--off] [--repeats N] [--seconds T] | ' +
  'limits paused | limits resume <session> [--json]';

export const LIMITS_HELP = `  limits     Enforced limits: used / max in the current window, reserved, when it resets.
                                                                    [--json]
  limits add --name N --scope SCOPE --window WINDOW --max X --usd|--requests|--tokens KIND | limits add <file>
             Add a limit from options or a JSON or YAML file (the body of POST /v1/limits). A call that would
             pass it is refused (429) before it goes upstream.
             SCOPE: token:<id>, service-account:<id>, session (each session), session:<id>,
             route-pack:<slug>, service (every call); --token-name NAME for token:<its id>.
             WINDOW: minute, hour, day, week, month. --usd: X in dollars ($5 or 5); --requests: calls;
             --tokens total|input|output: tokens (1,000,000, 500k and 2m read as numbers). [--disabled]
             --gauge ACCOUNT:WINDOW --max P: while a Gauge subscription window (e.g. Claude's 5-hour one) is
             P % used or more, refuse new agent sessions (sessions under way go on), or with --all-calls
             every call (no --window or metric then).
  limits set <id> --max X | --name N | --enable | --disable | limits remove <id>
             Change a limit (its scope, window and metric stay), or remove it and its counters.
  limits brake [--on|--off] [--repeats N] [--seconds T]
             The loop brake: a session that sends the same tool call N times in T seconds is paused.
  limits paused | limits resume <session>
             The sessions the loop brake paused; resume one.`;

/** `token:tok_1` as the API's scope; the ID may hold colons (a session ID may). */
export function parseScope(text: string): { kind: string; id?: string } {
  const colon = text.indexOf(':');
  const typed = colon < 0 ? text : text.slice(0, colon);
  const id = colon < 0 ? undefined : text.slice(colon + 1);
  const kind = SCOPE_KINDS[typed];
  const forms =
    'token:<id>, service-account:<id>, session, session:<id>, route-pack:<slug>, credential:<id> or service';
  if (kind === undefined) throw new UsageError(`--scope is one of: ${forms}.`);
  if (kind === 'service' && id !== undefined)
    throw new UsageError('--scope service counts every call: it takes no ID.');
  if (kind !== 'service' && kind !== 'session' && !id)
    throw new UsageError(`--scope ${typed} needs an ID: ${typed}:<id>.`);
  if (kind === 'session' && id === '')
    throw new UsageError('--scope session:<id> needs the ID; `session` alone counts each.');
  return id === undefined ? { kind } : { kind, id };
}

/** `5`, `$2.50`, `1,000,000`, `1_000`, `500k`, `2M` (k and M: thousands and millions). */
export function parseMax(text: string): number {
  const m = /^\$?(\d+(?:[,_]\d{3})*(?:\.\d+)?)([kKmM]?)$/.exec(text.trim());
  const times = ({ k: 1e3, m: 1e6 } as Record<string, number>)[(m?.[2] ?? '').toLowerCase()] ?? 1;
  // 0.3 * 1e6 is 300000.00000000006 in floating point: 15 digits say what was typed.
  const n = m ? Number((Number(m[1]!.replace(/[,_]/g, '')) * times).toPrecision(15)) : NaN;
  if (!Number.isFinite(n) || n <= 0)
    throw new UsageError('--max takes a number above 0, such as 5, $2.50, 100000, 100,000 or 500k.');
  return n;
}

/** The metric from --usd, --requests or --tokens KIND: exactly one. */
function metricOf(flags: Flags): string {
  const tokens = oneOf(str(flags.tokens), '--tokens', TOKEN_KINDS);
  const given = [flags.usd === true && 'usd', flags.requests === true && 'requests', tokens && `${tokens}_tokens`];
  const metrics = given.filter((m): m is string => typeof m === 'string');
  if (metrics.length !== 1)
    throw new UsageError(
      `Say what the limit counts with one of --usd, --requests, --tokens total|input|output. Usage: ${LIMITS_USAGE}`,
    );
  return metrics[0]!;
}

/** `--gauge claude:five_hour` as the API's `gauge` member; undefined without the option. */
function gaugeOf(flags: Flags): { accountId: string; windowId: string; stops?: string } | undefined {
  const text = str(flags.gauge);
  if (text === undefined) {
    if (flags['all-calls']) throw new UsageError('--all-calls goes with --gauge ACCOUNT:WINDOW.');
    return undefined;
  }
  const colon = text.lastIndexOf(':');
  if (colon <= 0 || colon === text.length - 1)
    throw new UsageError('--gauge takes ACCOUNT:WINDOW, a Gauge account and one of its windows (switchyard gauge).');
  if (flags.window !== undefined || flags.usd || flags.requests || flags.tokens !== undefined)
    throw new UsageError(
      '--gauge counts a share of the Gauge window: give no --window, --usd, --requests or --tokens.',
    );
  const gauge = { accountId: text.slice(0, colon), windowId: text.slice(colon + 1) };
  return flags['all-calls'] ? { ...gauge, stops: 'calls' } : gauge;
}

/** A local token's ID from its name; exit 1 when none or several have it. */
async function tokenIdOf(client: Client, name: string): Promise<string> {
  const answer = await client.call<ListAnswer<TokenView>>('GET', '/v1/tokens');
  const found = answer.data.filter((t) => t.name === name);
  if (found.length === 1) return found[0]!.id;
  if (found.length === 0) throw new CliError(`No token is named "${cell(name)}".`, EXIT.failed);
  throw new CliError(`${found.length} tokens are named "${cell(name)}": give --scope token:<id>.`, EXIT.failed);
}

/** A figure in the limit's unit: `$1.50` for dollars, `12,000` for tokens and requests. */
export const amount = (metric: string, n: number) =>
  metric === 'usd' ? usd(n) : metric === 'gauge_percent' ? `${Math.round(n)}%` : count(n);
const metricWords = (metric: string) =>
  metric === 'usd' ? 'dollars' : metric === 'gauge_percent' ? '% of window' : metric.replace('_', ' ');
// A `gauge` limit names its Gauge window.
const windowWords = (l: LimitView) =>
  l.window === 'gauge' ? `gauge ${l.gauge!.accountId}/${l.gauge!.windowId}` : l.window;
const perSession = (l: LimitView) => l.scope.kind === 'session' && l.scope.id === null;
const percent = (used: number, max: number) => `${Math.round((100 * used) / max)}%`;

export function scopeWords(scope: { kind: string; id: string | null }): string {
  if (scope.kind === 'service') return 'service';
  if (scope.kind === 'session' && scope.id === null) return 'each session';
  return `${scope.kind.replace('_', ' ')} ${scope.id}`;
}

/** The lines under a per-session limit: its most used sessions. */
function sessionLines(l: LimitView): string[] {
  if (!perSession(l)) return [];
  if (l.counters.length === 0) return ['    no session has used it this window'];
  const lines = l.counters
    .slice(0, SESSIONS_SHOWN)
    .map(
      (c) =>
        `    session ${cell(c.key)}: ${amount(l.metric, c.used)} / ${amount(l.metric, l.max)} ` +
        `(${percent(c.used, l.max)}), ${amount(l.metric, c.reserved)} reserved`,
    );
  const more = l.counters.length - SESSIONS_SHOWN;
  if (more > 0) lines.push(`    and ${more}${l.counters.length >= 50 ? ' or more' : ''} other sessions (--json)`);
  return lines;
}

export async function listLimits(client: Client, json: boolean): Promise<number> {
  const answer = await client.call<ListAnswer<LimitView>>('GET', '/v1/limits');
  if (json) return (printJson(answer), 0);
  const first = (l: LimitView) => l.counters[0] ?? { used: 0, reserved: 0, resetsAt: null };
  const printed = table(
    answer.data,
    [
      { header: 'ID', value: (l) => l.id },
      { header: 'NAME', value: (l) => l.name },
      { header: 'SCOPE', value: (l) => scopeWords(l.scope) },
      { header: 'WINDOW', value: windowWords },
      { header: 'METRIC', value: (l) => metricWords(l.metric) },
      {
        header: 'USED / MAX',
        value: (l) => `${perSession(l) ? '-' : amount(l.metric, first(l).used)} / ${amount(l.metric, l.max)}`,
        right: true,
      },
      { header: 'USED %', value: (l) => (perSession(l) ? '-' : percent(first(l).used, l.max)), right: true },
      {
        header: 'RESERVED',
        value: (l) => (perSession(l) ? '-' : amount(l.metric, first(l).reserved)),
        right: true,
      },
      { header: 'RESETS', value: (l) => relative(first(l).resetsAt) },
      { header: 'ENABLED', value: (l) => (l.enabled ? 'yes' : 'no') },
    ],
    'No limits. Add one: `switchyard limits add --name N --scope service --window day --max 5 --usd`.',
  );
  if (answer.data.length === 0) return (process.stdout.write(printed), 0);
  // One table line a limit (cells hold no line breaks), each followed by its sessions.
  const lines = printed.trimEnd().split('\n');
  say([lines[0], ...answer.data.flatMap((l, i) => [lines[i + 1], ...sessionLines(l)])].join('\n'));
  return 0;
}

/** `at most $5.00 a day for token tok_1`, `at most 60 requests an hour for each session`. */
function summary(l: LimitView): string {
  const unit = l.metric === 'usd' ? '' : ` ${metricWords(l.metric)}`;
  if (l.window === 'gauge') {
    const stops = l.gauge!.stops === 'new_sessions' ? 'new sessions of' : 'every call of';
    return `at ${l.max}% of ${windowWords(l)}, stops ${stops} ${scopeWords(l.scope)}`;
  }
  const per = `${l.window === 'hour' ? 'an' : 'a'} ${l.window}`;
  return `at most ${amount(l.metric, l.max)}${unit} ${per} for ${scopeWords(l.scope)}`;
}

export async function addLimit(client: Client, json: boolean, file: string | undefined, flags: Flags) {
  if (flags.scope !== undefined && flags['token-name'] !== undefined)
    throw new UsageError(`Give --scope or --token-name, not both. Usage: ${LIMITS_USAGE}`);
  const gauge = gaugeOf(flags);
  const required = { ...flags, scope: flags.scope ?? flags['token-name'], window: flags.window ?? (gauge && 'gauge') };
  const body = await bodyOf(
    file,
    required,
    ['name', 'scope', 'window', 'max'],
    () => ({
      name: str(flags.name),
      scope: flags.scope === undefined ? { kind: 'token' } : parseScope(str(flags.scope)!),
      window: gauge ? 'gauge' : oneOf(str(flags.window), '--window', WINDOWS),
      metric: gauge ? 'gauge_percent' : metricOf(flags),
      max: parseMax(str(flags.max)!),
      ...(gauge && { gauge }),
      ...(flags.disabled === true && { enabled: false }),
    }),
    LIMITS_USAGE,
  );
  const tokenName = str(flags['token-name']);
  if (file === undefined && tokenName !== undefined)
    body.scope = { kind: 'token', id: await tokenIdOf(client, tokenName) };
  const limit = await client.call<LimitView>('POST', '/v1/limits', body);
  if (json) return (printJson(limit), 0);
  const c = limit.counters[0];
  const now = c ? `; ${amount(limit.metric, c.used)} used, resets ${relative(c.resetsAt)}` : '';
  say(`Added limit ${limit.id} (${cell(limit.name)}): ${summary(limit)}${limit.enabled ? '' : ', disabled'}${now}.`);
  return 0;
}

export async function setLimit(client: Client, json: boolean, id: string, flags: Flags): Promise<number> {
  if (flags.enable === true && flags.disable === true) throw new UsageError('Give --enable or --disable, not both.');
  const patch = {
    ...(flags.name !== undefined && { name: str(flags.name) }),
    ...(flags.max !== undefined && { max: parseMax(str(flags.max)!) }),
    ...(flags.enable === true && { enabled: true }),
    ...(flags.disable === true && { enabled: false }),
  };
  if (Object.keys(patch).length === 0)
    throw new UsageError(`Say what to change: --max X, --name N, --enable or --disable. Usage: ${LIMITS_USAGE}`);
  const limit = await client.call<LimitView>('PATCH', `/v1/limits/${path(id)}`, patch);
  if (json) return (printJson(limit), 0);
  say(`Limit ${limit.id} (${cell(limit.name)}): ${summary(limit)}, ${limit.enabled ? 'enabled' : 'disabled'}.`);
  return 0;
}

export async function removeLimit(client: Client, json: boolean, id: string): Promise<number> {
  const answer = await client.call<DeletedAnswer>('DELETE', `/v1/limits/${path(id)}`);
  if (json) return (printJson(answer), 0);
  say(`Removed limit ${answer.id} and its counters.`);
  return 0;
}

/** `switchyard limits brake [--on|--off] [--repeats N] [--seconds T]`: shows the loop brake, or changes it. */
async function brake(client: Client, json: boolean, flags: Flags): Promise<number> {
  if (flags.on === true && flags.off === true) throw new UsageError('Give --on or --off, not both.');
  const whole = (name: string) => {
    const text = str(flags[name]);
    if (text === undefined) return undefined;
    if (!/^\d+$/.test(text)) throw new UsageError(`--${name} takes a whole number.`);
    return Number(text);
  };
  const patch = {
    ...(flags.on === true && { enabled: true }),
    ...(flags.off === true && { enabled: false }),
    ...(flags.repeats !== undefined && { repeats: whole('repeats') }),
    ...(flags.seconds !== undefined && { windowSeconds: whole('seconds') }),
  };
  const b = Object.keys(patch).length
    ? await client.call<LoopBrake>('PATCH', '/v1/limits/loop-brake', patch)
    : await client.call<LoopBrake>('GET', '/v1/limits/loop-brake');
  if (json) return (printJson(b), 0);
  say(
    `Loop brake ${b.enabled ? 'on' : 'off'}: a session that sends the same tool call ${b.repeats} times in ` +
      `${b.windowSeconds} s is paused until resumed.`,
  );
  return 0;
}

async function paused(client: Client, json: boolean): Promise<number> {
  const answer = await client.call<ListAnswer<PausedSession>>('GET', '/v1/limits/sessions');
  if (json) return (printJson(answer), 0);
  const printed = table(
    answer.data,
    [
      { header: 'SESSION', value: (p) => p.session },
      { header: 'TOOL', value: (p) => p.tool },
      { header: 'REPEATS', value: (p) => String(p.repeats), right: true },
      { header: 'PAUSED', value: (p) => relative(p.pausedAt) },
    ],
    'No session is paused.',
  );
  process.stdout.write(printed);
  return 0;
}

async function resume(client: Client, json: boolean, session: string): Promise<number> {
  const answer = await client.call<PausedSession>('POST', `/v1/limits/sessions/${path(session)}/resume`);
  if (json) return (printJson(answer), 0);
  say(`Resumed session ${cell(answer.session)}.`);
  return 0;
}

/** `switchyard limits ...`, parsed as the other set-up commands are (cli/dispatch-setup.ts). */
export async function limitsCommand(args: string[]): Promise<number> {
  const o = options(args, LIMIT_OPTIONS);
  const [sub, target] = positionals(o.positionals, 2, LIMITS_USAGE);
  const json = o.values.json === true;
  const { json: _json, ...flags } = o.values;
  const given = Object.keys(flags).filter((k) => flags[k] !== undefined);
  const allowed = sub === 'add' ? ADD_OPTIONS : sub === 'set' ? SET_OPTIONS : sub === 'brake' ? BRAKE_OPTIONS : [];
  const stray = given.filter((k) => !allowed.includes(k));
  if (stray.length > 0) {
    const home = BRAKE_OPTIONS.includes(stray[0]!)
      ? '`limits brake`'
      : ADD_OPTIONS.includes(stray[0]!)
        ? '`limits add`'
        : '`limits set`';
    const also = ADD_OPTIONS.includes(stray[0]!) && SET_OPTIONS.includes(stray[0]!) ? ' and `limits set`' : '';
    throw new UsageError(`--${stray[0]} is for ${home}${also}. Usage: ${LIMITS_USAGE}`);
  }
  if (sub === undefined || (sub === 'list' && target === undefined)) return listLimits(connect(), json);
  if (sub === 'add') return addLimit(connect(), json, target, flags);
  if (sub === 'set' && target !== undefined) return setLimit(connect(), json, target, flags);
  if (sub === 'remove' && target !== undefined) return removeLimit(connect(), json, target);
  if (sub === 'brake' && target === undefined) return brake(connect(), json, flags);
  if (sub === 'paused' && target === undefined) return paused(connect(), json);
  if (sub === 'resume' && target !== undefined) return resume(connect(), json, target);
  throw new UsageError(`Usage: ${LIMITS_USAGE}`);
}
