// Switchyard as the bench scripts run it (run.ts, runtime.ts): compiled first, as `npm start` does, with the
// Node flags of the `start` script, unsupervised (the measured PID is the service itself), its JSON log to a
// file; and one plain HTTP call helper.
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { openSync, readFileSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');

export interface Reply {
  status: number;
  text: string;
  headers: Record<string, string | string[] | undefined>;
}

export function call(
  port: number,
  method: string,
  path: string,
  headers: Record<string, string>,
  body: string | undefined,
): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method,
        path,
        headers: body === undefined ? headers : { 'content-type': 'application/json', ...headers },
        agent: false,
        timeout: 15_000,
      },
      (res) => {
        const parts: Buffer[] = [];
        res.on('data', (c: Buffer) => parts.push(c));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, text: Buffer.concat(parts).toString('utf8'), headers: res.headers }),
        );
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Builds when the source changed, starts the service on a free port with `home` as its data directory and
 * `logFile` for its log, and resolves once it listens. `extraNodeFlags` go before the script (`--cpu-prof`);
 * `track` sees the child at once, so a caller can stop it even when the start fails.
 */
export async function startSwitchyard(options: {
  home: string;
  logFile: string;
  extraNodeFlags?: string[];
  track?: (c: ChildProcess) => void;
  /** More environment for the service (SWITCHYARD_EDGE_THREADS). */
  env?: Record<string, string>;
}): Promise<{ child: ChildProcess; port: number; token: string }> {
  execFileSync(process.execPath, [join(ROOT, 'bin', 'build.js'), '--if-stale'], { stdio: 'inherit' });
  const syBin = join(ROOT, 'dist', 'bin', 'switchyard.js');
  // With the Node flags of `npm start` (package.json's start script), so the bench runs what users run.
  const startScript = (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } })
    .scripts.start;
  const nodeFlags = (/^node((?: --\S+)*) /.exec(startScript)?.[1] ?? '').split(' ').filter(Boolean);
  const child = spawn(process.execPath, [...nodeFlags, ...(options.extraNodeFlags ?? []), syBin, 'start'], {
    cwd: ROOT,
    env: {
      ...process.env,
      SWITCHYARD_HOME: options.home,
      SWITCHYARD_PORT: '0',
      SWITCHYARD_VAULT: 'file',
      SWITCHYARD_SUPERVISE: '0',
      ...options.env,
    },
    // Its JSON log goes to a file, as a service's log does: read through a pipe by the bench, it would cost
    // the shared cores a reader that nginx (access_log off) does not have.
    stdio: ['ignore', openSync(options.logFile, 'w'), 'pipe'],
  });
  options.track?.(child);
  // The port, from the notice on stderr.
  let stderrText = '';
  const port = await new Promise<number>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`switchyard did not start in 30 s:\n${stderrText}`)), 30_000);
    child.on('exit', (code) => reject(new Error(`switchyard exited with ${code}:\n${stderrText}`)));
    child.stderr!.on('data', (d: Buffer) => {
      stderrText = (stderrText + d.toString()).slice(-4000);
      const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(stderrText);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
  });
  return { child, port, token: readFileSync(join(options.home, 'token'), 'utf8').trim() };
}
