import { intOption, OptionError, options, positionals, scopesOption, str, UsageError } from './args.ts';
import { CliError, connect } from './client.ts';
import { modelAction, watchJob } from './follow.ts';
import { serviceInstall } from './install.ts';
import { dispatchSetup, SETUP_COMMANDS, SETUP_HELP, SETUP_USAGES } from './dispatch-setup.ts';
import { jobs, models, providers, ps, usage, USAGE_GROUPS } from './listing.ts';
import { launch } from './launch/index.ts';
import { LAUNCH_USAGE } from './launch/options.ts';
import { logs } from './logs.ts';
import {
  addProvider,
  aliasModel,
  createToken,
  enableProvider,
  hideModel,
  listTokens,
  parseScopes,
  removeProvider,
  revokeToken,
  testProvider,
} from './manage.ts';
import { approve, pair } from './pairing.ts';
import { KEYS_HELP, KEYS_USAGE, providerKeys } from './provider-keys.ts';
import { keepAlive, keepAliveValue, negativesAsValues, pinModel, resident } from './residency.ts';
import { listRequests, REPLAY_USAGE, replayRequest, REQUESTS_USAGE, requestsQuery, showRequest } from './requests.ts';

// The commands a person types against a running service (`switchyard providers`, `ps`, ...). Each parses
// its own options strictly (an unknown option is a usage error, exit 2), answers a table or, with --json, the
// API's JSON, and exits 0, 1 (the service refused or the job failed), 2 (usage) or 3 (no service found).

export const COMMANDS = [
  'providers',
  'models',
  'tokens',
  ...SETUP_COMMANDS,
  'ps',
  'usage',
  'requests',
  'replay',
  'jobs',
  'logs',
  'pair',
  'approve',
  'service',
  'launch',
] as const;

export const COMMANDS_HELP = `  providers  List providers.                                        [--json]
  providers add <kind>
             Add a provider; its API key is asked for (input hidden) or read from stdin.
                                                                    [--json] [--id ID] [--base-url URL] [--name NAME]
  providers remove|enable|disable|test <id>
             Remove, enable or disable a provider; test lists its models and says what failed.
${KEYS_HELP}
  models     List catalog models (--all: hidden ones too).          [--json] [--all]
  models load <id> | models unload <id>
             Load or unload a local model, with a progress bar.     [--json]
  models alias <alias> <id> | models hide <id> | models show <id>
             Give a model another name; hide it from discovery, or show it again.
  models pin <id> | models unpin <id> | models keep-alive <id> SECONDS|default
             Pin a local model (kept loaded, never evicted), or unpin it; keep-alive:
             how long a session keeps it warm (-1: always; default: the setting).
                                                                    [--json]
  models resident
             Local models holding the memory budget, and why.       [--json]
  tokens     List local tokens (admin).                             [--json]
  tokens create <name> | tokens revoke <id>
             Create a token (its secret printed once) or revoke one. [--json] [--scopes a,b] [--expires ISO-TIME]
${SETUP_HELP}
  ps         List loaded models.                                    [--json]
  usage      Usage totals and a breakdown.                          [--json] [--days N] [--by GROUP]
             GROUP: provider, model, provider_model, token, service_account or credential.
  requests   The request log, newest first (admin; the log is opt in). [--json] [--session S] [--model M]
             [--status ok|failed|aborted|CODE] [--limit N]; \`requests show <id>\` prints one with its bodies.
  replay     Run a logged call again on another model: both usages and costs.  --model M [--json]
  jobs       List jobs; \`jobs watch <id>\` follows one.              [--json]
  logs       The service's newest log lines.                        [--json] [-n N] [--follow]
  pair       Ask for a token, as an app would; prints it once approved.
                                                                    [--json] [--name NAME] [--scopes a,b]
  approve    List waiting pairing requests; \`approve <code|id>\` approves one (--deny denies).
                                                                    [--json] [--deny] [--scopes a,b]
  service install
             Start Switchyard at login (systemd user unit, launchd agent).
                                                                    [--json] [--dry-run]
  launch claude|codex [-- agent args]
             Start Claude Code or Codex CLI pointed at Switchyard, with a token of its own for the run
             (revoked when the agent exits). --print-env prints the variables instead.
                                                                    [--model M] [--usd X] [--print-env [--json]]`;

const PROVIDERS_USAGE =
  'switchyard providers [add <kind> [--id ID] [--base-url URL] [--name NAME] | remove|enable|disable|test <id>] ' +
  `[--json] | ${KEYS_USAGE.replace('switchyard providers ', '')}`;
const MODELS_USAGE =
  'switchyard models [--all] | models load|unload|hide|show|pin|unpin <id> | models alias <alias> <id> | ' +
  'models keep-alive <id> SECONDS|default | models resident [--json]';
const TOKENS_USAGE =
  'switchyard tokens [list] | tokens create <name> [--scopes a,b] [--expires ISO-TIME] | tokens revoke <id> [--json]';
const USAGES: Record<(typeof COMMANDS)[number], string> = {
  ...SETUP_USAGES,
  providers: PROVIDERS_USAGE,
  models: MODELS_USAGE,
  tokens: TOKENS_USAGE,
  ps: 'switchyard ps [--json]',
  usage: 'switchyard usage [--days N] [--by GROUP] [--json]',
  requests: REQUESTS_USAGE,
  replay: REPLAY_USAGE,
  jobs: 'switchyard jobs [watch <id>] [--json]',
  logs: 'switchyard logs [-n N] [--follow] [--json]',
  pair: 'switchyard pair [--name NAME] [--scopes a,b] [--json]',
  approve: 'switchyard approve [<code|id>] [--deny] [--scopes a,b] [--json]',
  service: 'switchyard service install [--dry-run] [--json]',
  launch: LAUNCH_USAGE,
};

/** `switchyard models ...`: the catalog's models, their actions, and their residency (pin, keep-alive). */
function modelsCommand(args: string[]): Promise<number> {
  const o = options(negativesAsValues(args), { all: { type: 'boolean' } });
  const [sub, id, model] = positionals(o.positionals, 3, MODELS_USAGE);
  const json = o.values.json === true;
  if (sub === undefined) return models(connect(), json, o.values.all === true);
  if ((sub === 'load' || sub === 'unload') && id && model === undefined) return modelAction(connect(), sub, id, json);
  if ((sub === 'hide' || sub === 'show') && id && model === undefined)
    return hideModel(connect(), json, id, sub === 'hide');
  if (sub === 'alias' && id && model) return aliasModel(connect(), json, id, model);
  if ((sub === 'pin' || sub === 'unpin') && id && model === undefined)
    return pinModel(connect(), json, id, sub === 'pin');
  if (sub === 'keep-alive' && id && model) {
    // Checked before the service is looked for: a typo is a usage error, never a request.
    const seconds = keepAliveValue(model);
    return keepAlive(connect(), json, id, seconds);
  }
  if (sub === 'resident' && id === undefined) return resident(connect(), json);
  throw new UsageError(`Usage: ${MODELS_USAGE}`);
}

/** `switchyard requests [show <id>]`: the request log. */
function requestsCommand(args: string[]): Promise<number> {
  const o = options(args, {
    session: { type: 'string' },
    model: { type: 'string' },
    status: { type: 'string' },
    limit: { type: 'string' },
  });
  const [sub, id] = positionals(o.positionals, 2, REQUESTS_USAGE);
  const json = o.values.json === true;
  if (sub === 'show' && id !== undefined) return showRequest(connect(), json, id);
  if (sub !== undefined) throw new UsageError(`Usage: ${REQUESTS_USAGE}`);
  const query = requestsQuery({
    session: str(o.values.session),
    model: str(o.values.model),
    status: str(o.values.status),
    limit: intOption(str(o.values.limit), '--limit', 1, 200, 50),
  });
  return listRequests(connect(), json, query);
}

/** `switchyard replay <id> --model M`. */
function replayCommand(args: string[]): Promise<number> {
  const o = options(args, { model: { type: 'string' } });
  const [id] = positionals(o.positionals, 1, REPLAY_USAGE);
  const model = str(o.values.model);
  if (id === undefined || model === undefined) throw new UsageError(`Usage: ${REPLAY_USAGE}`);
  return replayRequest(connect(), o.values.json === true, id, model);
}

// One case per command, each a few lines: the switch is long, no case is.
async function dispatch(command: (typeof COMMANDS)[number], args: string[]): Promise<number> {
  switch (command) {
    case 'presets':
    case 'route-packs':
    case 'gauge':
    case 'budgets':
    case 'alerts':
    case 'limits':
    case 'services':
      return dispatchSetup(command, args);
    case 'providers': {
      if (args[0] === 'keys') return providerKeys(connect, args.slice(1));
      const o = options(args, { id: { type: 'string' }, 'base-url': { type: 'string' }, name: { type: 'string' } });
      const [sub, target] = positionals(o.positionals, 2, PROVIDERS_USAGE);
      const json = o.values.json === true;
      if (sub === undefined) return providers(connect(), json);
      if (target === undefined) throw new UsageError(`Usage: ${PROVIDERS_USAGE}`);
      if (sub === 'add')
        return addProvider(connect(), json, {
          kind: target,
          id: str(o.values.id),
          baseUrl: str(o.values['base-url']),
          name: str(o.values.name),
        });
      if (sub === 'remove') return removeProvider(connect(), json, target);
      if (sub === 'enable' || sub === 'disable') return enableProvider(connect(), json, target, sub === 'enable');
      if (sub === 'test') return testProvider(connect(), json, target);
      throw new UsageError(`Usage: ${PROVIDERS_USAGE}`);
    }
    case 'tokens': {
      const o = options(args, { scopes: { type: 'string' }, expires: { type: 'string' } });
      const [sub, target] = positionals(o.positionals, 2, TOKENS_USAGE);
      const json = o.values.json === true;
      if (sub === undefined || (sub === 'list' && target === undefined)) return listTokens(connect(), json);
      if (sub === 'create' && target !== undefined) {
        if (target.length > 100) throw new UsageError('A token name is 1 to 100 characters.');
        return createToken(connect(), json, target, parseScopes(str(o.values.scopes)), str(o.values.expires));
      }
      if (sub === 'revoke' && target !== undefined) return revokeToken(connect(), json, target);
      throw new UsageError(`Usage: ${TOKENS_USAGE}`);
    }
    case 'models':
      return modelsCommand(args);
    case 'ps': {
      const o = options(args);
      positionals(o.positionals, 0, USAGES.ps);
      return ps(connect(), o.values.json === true);
    }
    case 'usage': {
      const o = options(args, { days: { type: 'string' }, by: { type: 'string' } });
      positionals(o.positionals, 0, USAGES.usage);
      const by = str(o.values.by) ?? 'model';
      if (!(USAGE_GROUPS as readonly string[]).includes(by))
        throw new UsageError(`--by must be one of: ${USAGE_GROUPS.join(', ')}.`);
      return usage(
        connect(),
        o.values.json === true,
        intOption(str(o.values.days), '--days', 1, 3650, 30),
        by as (typeof USAGE_GROUPS)[number],
      );
    }
    case 'requests':
      return requestsCommand(args);
    case 'replay':
      return replayCommand(args);
    case 'jobs': {
      const o = options(args);
      const [sub, id] = positionals(o.positionals, 2, USAGES.jobs);
      if (sub === undefined) return jobs(connect(), o.values.json === true);
      if (sub === 'watch' && id) return watchJob(connect(), id, o.values.json === true);
      throw new UsageError('Usage: switchyard jobs | jobs watch <id>');
    }
    case 'logs': {
      const o = options(args, { lines: { type: 'string', short: 'n' }, follow: { type: 'boolean', short: 'f' } });
      positionals(o.positionals, 0, USAGES.logs);
      return logs(
        connect(),
        o.values.json === true,
        intOption(str(o.values.lines), '-n', 1, 1000, 50),
        o.values.follow === true,
      );
    }
    case 'pair': {
      const o = options(args, { name: { type: 'string' }, scopes: { type: 'string' } });
      positionals(o.positionals, 0, USAGES.pair);
      const name = str(o.values.name) ?? 'switchyard CLI';
      if (name.length < 1 || name.length > 100) throw new UsageError('--name must be 1 to 100 characters.');
      return pair(connect(), o.values.json === true, name, scopesOption(str(o.values.scopes)));
    }
    case 'approve': {
      const o = options(args, { deny: { type: 'boolean' }, scopes: { type: 'string' } });
      const [which] = positionals(o.positionals, 1, USAGES.approve);
      return approve(
        connect(),
        o.values.json === true,
        which ?? null,
        o.values.deny === true,
        scopesOption(str(o.values.scopes)),
      );
    }
    case 'service': {
      const o = options(args, { 'dry-run': { type: 'boolean' } });
      const [sub] = positionals(o.positionals, 1, USAGES.service);
      if (sub !== 'install') throw new UsageError('Usage: switchyard service install [--dry-run] [--json]');
      return serviceInstall(o.values.json === true, o.values['dry-run'] === true);
    }
    case 'launch':
      return launch(args);
  }
}

/** Runs a command; resolves with its exit code, having said what went wrong on stderr. */
export async function runCommand(command: (typeof COMMANDS)[number], args: string[]): Promise<number> {
  try {
    return await dispatch(command, args);
  } catch (err) {
    if (err instanceof CliError) {
      const usage = err instanceof OptionError ? ` Usage: ${USAGES[command]}` : '';
      process.stderr.write(`switchyard ${command}: ${err.message}${usage}\n`);
      return err.exitCode;
    }
    throw err;
  }
}
