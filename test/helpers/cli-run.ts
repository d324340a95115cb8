import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { serviceBin } from './service.ts';

// The CLI run as a person runs it, for the set-up command tests (cli-manage*.test.ts): the executable in a
// separate process, without blocking the test process, which also serves the fakes the service reaches
// (spawnSync would deadlock against them). Everything any command printed is kept for the files' leak checks.

export interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** `env()`: the shell's environment, read at each run (a file sets it in its `before`). */
export function cliRunner(env: () => NodeJS.ProcessEnv) {
  const printed: string[] = [];

  function collect(child: ReturnType<typeof spawn>, onOut?: (stdout: string) => void): Promise<Run> {
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      stdout += d;
      onOut?.(stdout);
    });
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    return new Promise((resolve) =>
      child.on('close', (status) => {
        printed.push(stdout, stderr);
        resolve({ status, stdout, stderr });
      }),
    );
  }

  /** `switchyard <args>` with `input` on stdin. */
  function cli(args: string[], input = ''): Promise<Run> {
    const child = spawn(process.execPath, [serviceBin(), ...args], { env: env(), stdio: ['pipe', 'pipe', 'pipe'] });
    child.stdin.end(input);
    return collect(child);
  }

  /** `switchyard <args>`, expected to exit 0; its stdout. */
  async function ok(args: string[], input = ''): Promise<string> {
    const r = await cli(args, input);
    assert.equal(r.status, 0, `switchyard ${args.join(' ')}: ${r.stderr}`);
    return r.stdout;
  }

  /**
   * Runs a command on a pseudo-terminal (util-linux script) and types `typed` once it shows `prompt`, as a
   * person would: what the terminal shows, echo included, is the command's stdout here.
   */
  function inPty(args: string[], prompt: RegExp, typed: string): Promise<Run> {
    const quoted = [process.execPath, serviceBin(), ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
    const child = spawn('script', ['-qfec', quoted, '/dev/null'], {
      env: { ...env(), TERM: 'dumb' },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let sent = false;
    return collect(child, (stdout) => {
      if (!sent && prompt.test(stdout)) {
        sent = true;
        child.stdin!.write(typed);
      }
    });
  }

  return { cli, ok, inPty, printed };
}
