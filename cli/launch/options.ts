import { parseArgs } from 'node:util';
import { OptionError, optionMessage, UsageError } from '../args.ts';
import { cell } from '../output.ts';
import { AGENT_NAMES, type AgentName, isAgentName } from './agents.ts';

// `switchyard launch claude|codex [--model M] [--usd X] [--print-env] [--json] [-- agent args]`, checked whole
// before anything is asked of the service. What follows `--` is the agent's and is passed on untouched.

export const LAUNCH_USAGE =
  'switchyard launch claude|codex [--model M] [--usd X] [--print-env [--json]] [-- agent args]';

export interface LaunchOptions {
  agent: AgentName;
  model: string | null;
  usd: number | null;
  printEnv: boolean;
  json: boolean;
  agentArgs: string[];
}

/** A model ID as the catalog names them (`anthropic/claude-sonnet-4-5`, `@preset/x`), printable, bounded. */
const MODEL_MAX = 320;
/** LIMIT_BOUNDS.usdMax of protocol/http/limits.ts, whose schemas a launch need not compile. */
const USD_MAX = 1_000_000_000;

function modelOption(value: string | undefined): string | null {
  if (value === undefined) return null;
  if (value.length === 0 || value.length > MODEL_MAX || /[\u0000-\u0020\u007f-\u009f]/.test(value))
    throw new UsageError(`--model takes a model ID of 1 to ${MODEL_MAX} printable characters without spaces.`);
  return value;
}

/** Dollars: `5`, `2.50`, `$2.50`; above 0. */
function usdOption(value: string | undefined): number | null {
  if (value === undefined) return null;
  const n = /^\$?\d+(?:\.\d+)?$/.test(value.trim()) ? Number(value.trim().replace('$', '')) : NaN;
  if (!Number.isFinite(n) || n <= 0 || n > USD_MAX)
    throw new UsageError(`--usd takes a dollar amount above 0 (such as 5 or 2.50), not "${cell(value.slice(0, 40))}".`);
  return n;
}

export function parseLaunch(args: readonly string[]): LaunchOptions {
  const cut = args.indexOf('--');
  const own = cut < 0 ? [...args] : args.slice(0, cut);
  const agentArgs = cut < 0 ? [] : args.slice(cut + 1);
  // `--usd -5` is a negative amount to refuse as such, not a missing value.
  const spread: string[] = [];
  for (let i = 0; i < own.length; i++) {
    const next = own[i + 1];
    if (own[i] === '--usd' && next !== undefined && /^-\d/.test(next)) {
      spread.push(`--usd=${next}`);
      i++;
    } else spread.push(own[i]!);
  }
  let parsed;
  try {
    parsed = parseArgs({
      args: spread,
      options: {
        model: { type: 'string' },
        usd: { type: 'string' },
        'print-env': { type: 'boolean' },
        json: { type: 'boolean' },
      },
      allowPositionals: true,
      strict: true,
    });
  } catch (err) {
    const message = optionMessage(err as Error & { code?: string });
    const hint = /^Unknown option/.test(message) ? ' Options for the agent go after `--`.' : '';
    throw new OptionError(message + hint);
  }
  const [agent, ...extra] = parsed.positionals;
  if (agent === undefined)
    throw new UsageError(`Which agent? One of: ${AGENT_NAMES.join(', ')}. Usage: ${LAUNCH_USAGE}`);
  if (!isAgentName(agent))
    throw new UsageError(`Unknown agent "${cell(agent.slice(0, 40))}". Agents: ${AGENT_NAMES.join(', ')}.`);
  if (extra.length > 0)
    throw new UsageError(
      `Arguments for the agent go after \`--\`: switchyard launch ${agent} -- ${cell(extra.join(' ').slice(0, 200))}`,
    );
  const { values } = parsed;
  if (values.json === true && values['print-env'] !== true) throw new UsageError('--json goes with --print-env.');
  return {
    agent,
    model: modelOption(values.model),
    usd: usdOption(values.usd),
    printEnv: values['print-env'] === true,
    json: values.json === true,
    agentArgs,
  };
}
