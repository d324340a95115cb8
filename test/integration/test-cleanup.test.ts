import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

// W2.7: a test file leaves no data directory and no service behind, also when it fails. A child process
// starts a service through the helper and then fails without stopping it.

const HELPER = fileURLToPath(new URL('../helpers/service.ts', import.meta.url));

/** A killed process whose parent is gone may stay a zombie here (PID 1 of this container does not reap): dead. */
function alive(pid: number): boolean {
  try {
    return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]![0] !== 'Z';
  } catch {
    return false;
  }
}

/** SIGKILL is sent at the child's exit, but a process with many threads takes a moment to be torn down. */
async function gone(pid: number): Promise<boolean> {
  for (let i = 0; i < 250 && alive(pid); i++) await new Promise((resolve) => setTimeout(resolve, 20));
  return !alive(pid);
}

test("a failing test file's service is killed and its data directory removed when its process exits", async () => {
  const script = `
    const { startService } = await import(${JSON.stringify(HELPER)});
    const svc = await startService();
    console.log(JSON.stringify({ home: svc.home, pid: svc.process.pid }));
    process.exit(1);
  `;
  const run = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  assert.equal(run.status, 1, run.stderr);
  const { home, pid } = JSON.parse(run.stdout.trim().split('\n').at(-1)!) as { home: string; pid: number };
  assert.equal(existsSync(home), false, 'the data directory is gone');
  assert.equal(await gone(pid), true, 'the service is gone');
});
