import { basename } from 'node:path';
import { UsageError } from '../args.ts';
import { connect } from '../client.ts';
import { AGENTS } from './agents.ts';
import { findBinary } from './find-binary.ts';
import { parseLaunch } from './options.ts';
import { printEnv } from './print-env.ts';
import { agentEnv, type RunningAgent, runAgent } from './run-agent.ts';
import { mintRunToken } from './run-token.ts';

// `switchyard launch <agent>`: a token for this run, the agent started pointed at the service with it, the
// token revoked when the agent is done. Generic: what differs between agents is in their files (agents.ts).

/** A run's token lives this long from its minting and from each extension. */
export const RUN_TOKEN_LIFETIME_MS = 15 * 60_000;
/** Extensions every 5 minutes: two can fail before the token expires under a running agent. */
const RENEW_EVERY_MS = 5 * 60_000;
/** --print-env's token: nothing revokes it, so it lasts a working day and no more. */
export const PRINT_ENV_LIFETIME_MS = 12 * 60 * 60_000;

const warn = (line: string) => void process.stderr.write(`switchyard launch: ${line}\n`);

/** `launch claude switchyard`: the agent and the directory, in characters any listing shows as they are. */
export function tokenName(agent: string, cwd: string): string {
  const dir =
    basename(cwd)
      .replace(/[^A-Za-z0-9._-]+/g, '_')
      .slice(0, 64) || '_';
  return `launch ${agent} ${dir}`;
}

/** SWITCHYARD_LAUNCH_RENEW_MS: a shorter interval for tests, never one the token would not outlive. */
function renewEvery(env: NodeJS.ProcessEnv): number {
  const text = env.SWITCHYARD_LAUNCH_RENEW_MS;
  if (text === undefined || text === '') return RENEW_EVERY_MS;
  const n = /^\d+$/.test(text) ? Number(text) : NaN;
  if (!(n >= 100 && n <= RENEW_EVERY_MS))
    throw new UsageError(`SWITCHYARD_LAUNCH_RENEW_MS must be a whole number from 100 to ${RENEW_EVERY_MS}.`);
  return n;
}

export async function launch(args: readonly string[], env: NodeJS.ProcessEnv = process.env): Promise<number> {
  const o = parseLaunch(args);
  const agent = AGENTS[o.agent];
  const every = renewEvery(env);
  const file = o.printEnv ? null : findBinary(agent, env);
  const client = connect(env);
  const run = await mintRunToken({
    client,
    name: tokenName(o.agent, process.cwd()),
    lifetimeMs: file === null ? PRINT_ENV_LIFETIME_MS : RUN_TOKEN_LIFETIME_MS,
    usd: o.usd,
    warn,
  });
  const plan = agent.plan({ baseUrl: client.url, token: run.secret, model: o.model, env });
  if (file === null) {
    printEnv({ agent, plan, run, agentArgs: o.agentArgs, json: o.json });
    return 0;
  }
  run.keepAlive(every);
  let running: RunningAgent | null = null;
  try {
    running = runAgent({ file, args: [...plan.args, ...o.agentArgs], env: agentEnv(env, plan) });
    return await running.exited;
  } finally {
    await run.end();
    running?.release();
  }
}
