import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { describe, test } from 'node:test';
import { EXIT_CANNOT_START } from '../../service/supervise.ts';
import { BIN, rawRequest, startService, tempHome, type TestService } from '../helpers/service.ts';

// `switchyard start` as a supervisor over the real service: a service killed with SIGKILL comes back on the
// same data directory and token; SIGTERM stops both; a service that cannot start is not restarted forever.

const SUPERVISED = { SWITCHYARD_SUPERVISE: '1' };
const RESTART_WAIT_MS = 20_000;

const lines = (svc: TestService, msg: string) => svc.logLines().filter((l) => l.msg === msg);

/** Resolves once the log holds `count` lines with this message (the log is all the test sees of the child). */
async function nth(svc: TestService, msg: string, count: number): Promise<Record<string, unknown>> {
  await svc.waitForLog(() => lines(svc, msg).length >= count, RESTART_WAIT_MS);
  return lines(svc, msg)[count - 1]!;
}

/** A process that exited but was not reaped yet (its parent was killed) is a zombie: not alive. */
async function goneWithin(pid: number, ms: number): Promise<boolean> {
  for (const end = Date.now() + ms; Date.now() < end; await new Promise((r) => setTimeout(r, 20)))
    if (!alive(pid)) return true;
  return !alive(pid);
}

function alive(pid: number): boolean {
  try {
    if (process.platform === 'linux') return readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]![0] !== 'Z';
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

describe('the supervised service', () => {
  test('a service killed with SIGKILL is started again and serves the same token; SIGTERM then stops both and exits ' +
    '0', {
    timeout: 60_000,
  }, async () => {
    const svc = await startService({ env: SUPERVISED });
    try {
      const first = await nth(svc, 'service process started', 1);
      const firstPid = first.pid as number;
      assert.equal(first.supervisorPid, svc.process.pid);
      assert.notEqual(firstPid, svc.process.pid, 'the service is a child of the supervisor');
      assert.equal((await svc.request('GET', '/v1/settings')).status, 200);

      process.kill(firstPid, 'SIGKILL');
      const died = await nth(svc, 'service process died; restarting', 1);
      assert.deepEqual([died.pid, died.signal, died.restartInMs], [firstPid, 'SIGKILL', 500]);
      const second = await nth(svc, 'service process started', 2);
      const secondPid = second.pid as number;
      assert.notEqual(secondPid, firstPid);
      const port = (await nth(svc, 'listening', 2)).port as number;

      assert.equal((await rawRequest(port, 'GET', '/health')).status, 200);
      const settings = await rawRequest(port, 'GET', '/v1/settings', { adminToken: svc.adminToken });
      assert.equal(settings.status, 200, 'the same token, from the same data directory');
      assert.match(svc.stderr(), /stopped unexpectedly \(signal SIGKILL\); restarting it in 0\.5 s/);

      assert.equal(await svc.stop('SIGTERM'), 0);
      assert.equal(alive(secondPid), false, 'the service stopped with the supervisor');
      assert.equal(lines(svc, 'stopped').length, 1, 'the second service drained and stopped cleanly');
    } finally {
      await svc.kill9();
    }
  });

  test('a supervisor killed with SIGKILL does not leave its service running', { timeout: 30_000 }, async () => {
    const svc = await startService({ env: SUPERVISED });
    const pid = (await nth(svc, 'service process started', 1)).pid as number;
    // The helper resolves once every holder of the service's stdout has closed it: the child too.
    await svc.kill9();
    // Its stdout closes a moment before the process is gone (a grandchild: no exit event to await here).
    assert.equal(await goneWithin(pid, 10_000), true, 'the service outlived its killed supervisor');
    assert.equal(lines(svc, 'stopped').length, 1, 'it stopped cleanly, not killed');
  });

  test('a service that cannot start (its port is taken) is not restarted: the supervisor gives up with 78', {
    timeout: 30_000,
  }, async () => {
    const blocker = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as AddressInfo).port;
    try {
      const child = spawn(process.execPath, [BIN, 'start'], {
        env: {
          ...process.env,
          ...SUPERVISED,
          SWITCHYARD_HOME: tempHome(),
          SWITCHYARD_PORT: String(port),
          SWITCHYARD_VAULT: 'file',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      let err = '';
      child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d));
      child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
      const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
      assert.equal(code, EXIT_CANNOT_START, err);
      assert.match(err, /cannot listen/);
      assert.match(err, /cannot start .*not restarting/);
      const started = out.split('\n').filter((l) => l.includes('"msg":"service process started"'));
      assert.equal(started.length, 1, 'started once, never again');
    } finally {
      blocker.close();
    }
  });
});
