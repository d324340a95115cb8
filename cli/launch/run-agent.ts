import { spawn } from 'node:child_process';
import { constants } from 'node:os';
import { CliError, EXIT } from '../client.ts';
import type { AgentPlan } from './agent.ts';

// The agent as a child with the terminal's stdio, the signals that stop a program passed through to it, and
// its way of ending (its exit code, or 128 + the signal's number as a shell reports a death by signal) as the
// launcher's own. SIGINT typed at a terminal reaches the agent from the terminal too (the same process group);
// an agent's full-screen interface reads Ctrl-C as a key instead, so only a headless run gets it twice.

const PASSED_ON = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** The launcher's environment with the plan's variables removed and set. */
export function agentEnv(env: NodeJS.ProcessEnv, plan: AgentPlan): NodeJS.ProcessEnv {
  const out: NodeJS.ProcessEnv = { ...env };
  for (const name of plan.unset) delete out[name];
  return Object.assign(out, plan.set);
}

export interface AgentRun {
  file: string;
  args: readonly string[];
  env: NodeJS.ProcessEnv;
}

export interface RunningAgent {
  /** The exit code once the agent has exited; a CliError (exit 1) when it could not start. */
  exited: Promise<number>;
  /**
   * Stops holding the signals. Until then one that arrives after the agent's exit is ignored, so that the
   * launcher finishes its clean-up (bounded) instead of dying with the token live.
   */
  release(): void;
}

export function runAgent(run: AgentRun): RunningAgent {
  const child = spawn(run.file, run.args, { stdio: 'inherit', env: run.env });
  const pass = (signal: NodeJS.Signals) => {
    if (child.exitCode === null && child.signalCode === null) child.kill(signal);
  };
  for (const signal of PASSED_ON) process.on(signal, pass);
  const exited = new Promise<number>((resolve, reject) => {
    child.once('error', (err) => reject(new CliError(`Could not start ${run.file}: ${err.message}`, EXIT.failed)));
    child.once('exit', (code, signal) => resolve(code ?? 128 + (signal ? constants.signals[signal] : 0)));
  });
  return {
    exited,
    release() {
      for (const signal of PASSED_ON) process.off(signal, pass);
    },
  };
}
