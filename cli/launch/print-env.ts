import { printJson } from '../output.ts';
import type { Agent, AgentPlan } from './agent.ts';
import type { RunToken } from './run-token.ts';

// `launch --print-env`: what a run would set, for a shell to take over. stdout holds only `export` and `unset`
// lines, so `eval "$(switchyard launch codex --print-env)"` sets them and starts nothing; what a person reads
// (the token, its expiry, for Codex the command line that carries its `-c` overrides) goes to stderr.

const SAFE = /^[A-Za-z0-9_./:=@%+,-]+$/;

/** One word for a POSIX shell: as it is when nothing in it is special, else in single quotes. */
export const shellWord = (word: string) => (SAFE.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`);

export interface PrintEnv {
  agent: Agent;
  plan: AgentPlan;
  run: RunToken;
  agentArgs: readonly string[];
  json: boolean;
}

export function printEnv({ agent, plan, run, agentArgs, json }: PrintEnv): void {
  const command = [agent.binary, ...plan.args, ...agentArgs];
  if (json) {
    printJson({
      token: run.token,
      secret: run.secret,
      limit: run.limit,
      set: plan.set,
      unset: plan.unset,
      command,
    });
    return;
  }
  const lines = Object.entries(plan.set).map(([name, value]) => `export ${name}=${shellWord(value)}`);
  if (plan.unset.length > 0) lines.push(`unset ${plan.unset.join(' ')}`);
  process.stdout.write(lines.join('\n') + '\n');
  const { token, limit } = run;
  const notes = [
    `Token ${token.id} ("${token.name}", inference) expires at ${token.expiresAt}; ` +
      `\`switchyard tokens revoke ${token.id}\` ends it sooner.`,
    ...(limit ? [`Limit ${limit.id} stays until removed: \`switchyard limits remove ${limit.id}\`.`] : []),
    `With these set, run ${agent.title}:`,
    `  ${command.map(shellWord).join(' ')}`,
  ];
  process.stderr.write(notes.join('\n') + '\n');
}
