import { accessSync, constants, statSync } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';
import { CliError, EXIT } from '../client.ts';
import { cell } from '../output.ts';
import type { Agent } from './agent.ts';

// Where the agent's executable is: the file the agent's variable names (SWITCHYARD_CLAUDE_BIN=/opt/claude), a
// command that variable names, or the agent's own command, looked up on PATH as a shell would. Found before
// anything is asked of the service, so a missing agent mints no token.

function executable(file: string): boolean {
  try {
    accessSync(file, constants.X_OK);
    return statSync(file).isFile();
  } catch {
    return false;
  }
}

/** Windows finds `codex.cmd` for `codex`; elsewhere the name is the file. */
function candidates(dir: string, name: string, env: NodeJS.ProcessEnv): string[] {
  const file = join(dir, name);
  if (process.platform !== 'win32') return [file];
  const exts = (env.PATHEXT ?? '.EXE;.CMD;.BAT;.COM').split(';').filter(Boolean);
  return [file, ...exts.map((ext) => file + ext.toLowerCase())];
}

function onPath(name: string, env: NodeJS.ProcessEnv): string | null {
  // An empty PATH entry means the current directory to a shell; a launcher should not run what lies there.
  for (const dir of (env.PATH ?? '').split(delimiter).filter((d) => d !== '' && isAbsolute(d)))
    for (const file of candidates(dir, name, env)) if (executable(file)) return file;
  return null;
}

/** The agent's executable, or a CliError (exit 1) that says what was looked for and how to name another. */
export function findBinary(agent: Agent, env: NodeJS.ProcessEnv): string {
  const named = env[agent.binaryEnv]?.trim();
  if (named) {
    const isPath = /[\\/]/.test(named);
    const file = isPath ? (executable(resolve(named)) ? resolve(named) : null) : onPath(named, env);
    if (file !== null) return file;
    const what = isPath ? 'an executable file' : 'a command on PATH';
    throw new CliError(`${agent.binaryEnv} names "${cell(named.slice(0, 200))}", which is not ${what}.`, EXIT.failed);
  }
  const file = onPath(agent.binary, env);
  if (file !== null) return file;
  throw new CliError(
    `${agent.title} (\`${agent.binary}\`) was not found on PATH. Install it, or name its executable in ` +
      `${agent.binaryEnv}.`,
    EXIT.failed,
  );
}
