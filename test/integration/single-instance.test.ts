import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { EXIT_CANNOT_START } from '../../service/supervise.ts';
import { LOCK_FILE } from '../../store/dir-lock.ts';
import { serviceBin, startService, tempHome, type TestService } from '../helpers/service.ts';

// One service per port and per data directory (W2.7): a second start on a taken port or a held data
// directory exits with a clear message while the first keeps serving; a lock left by a killed service is
// taken over.

/** Runs a second, unsupervised start to its end; resolves with its exit code and what it told the terminal. */
function secondStart(env: Record<string, string>): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [serviceBin(), 'start'], {
      env: {
        ...process.env,
        SWITCHYARD_LOG_LEVEL: 'info',
        SWITCHYARD_VAULT: 'file',
        SWITCHYARD_SUPERVISE: '0',
        ...env,
      },
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stderr }));
  });
}

describe('single instance', () => {
  let first: TestService;
  before(async () => {
    first = await startService();
  });
  after(async () => {
    await first.stop();
  });

  const stillServing = async () => {
    for (let i = 0; i < 10; i++) assert.equal((await first.request('GET', '/v1/settings')).status, 200);
  };

  it('a second service on a taken port (another data directory) exits with a clear message', async () => {
    const { code, stderr } = await secondStart({ SWITCHYARD_HOME: tempHome(), SWITCHYARD_PORT: String(first.port) });
    assert.equal(code, EXIT_CANNOT_START);
    assert.match(stderr, new RegExp(`cannot listen on 127\\.0\\.0\\.1:${first.port}`));
    assert.doesNotMatch(stderr, /listening on/);
    await stillServing();
  });

  it('a failed first start leaves no data directory and no token behind', async () => {
    const missing = join(tempHome(), 'new-home');
    const empty = tempHome();
    for (const home of [missing, empty]) {
      const { code, stderr } = await secondStart({ SWITCHYARD_HOME: home, SWITCHYARD_PORT: String(first.port) });
      assert.equal(code, EXIT_CANNOT_START, stderr);
      assert.doesNotMatch(stderr, /Created an admin token/);
    }
    assert.equal(existsSync(missing), false, 'the directory it created is gone');
    assert.deepEqual(readdirSync(empty), [], 'the empty directory stays empty');
    await stillServing();
  });

  it('a second service on the same data directory (another port) exits with a clear message', async () => {
    const { code, stderr } = await secondStart({ SWITCHYARD_HOME: first.home, SWITCHYARD_PORT: '0' });
    assert.equal(code, EXIT_CANNOT_START);
    assert.match(
      stderr,
      new RegExp(`Another Switchyard service \\(PID ${first.process.pid}\\) is already running on this data directory`),
    );
    await stillServing();
    assert.equal(
      readFileSync(join(first.home, LOCK_FILE), 'utf8').trim(),
      String(first.process.pid),
      "the lock is still the first service's",
    );
  });

  it('the lock of a killed service is taken over; an orderly stop removes it', async () => {
    // Last: the first service is killed here, and its data directory started on again.
    await first.kill9();
    assert.equal(existsSync(join(first.home, LOCK_FILE)), true, 'kill -9 leaves the lock behind');
    const next = await startService({ home: first.home });
    assert.equal(readFileSync(join(first.home, LOCK_FILE), 'utf8').trim(), String(next.process.pid));
    assert.equal((await next.request('GET', '/v1/settings')).status, 200);
    assert.equal(await next.stop(), 0);
    assert.equal(existsSync(join(first.home, LOCK_FILE)), false);
  });
});
