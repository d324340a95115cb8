import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { describe, test } from 'node:test';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BIN, rawRequest, startService, tempHome } from '../helpers/service.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

function cli(args: string[], home: string) {
  return spawnSync(process.execPath, [BIN, ...args], {
    env: { ...process.env, SWITCHYARD_HOME: home },
    encoding: 'utf8',
  });
}

describe('switchyard CLI', () => {
  test('--help lists the commands', () => {
    const r = cli(['--help'], tempHome());
    assert.equal(r.status, 0);
    assert.match(r.stdout, /Usage: switchyard/);
    assert.match(r.stdout, /token/);
    assert.match(r.stdout, /^ {2}launch claude\|codex \[-- agent args\]\n {13}Start Claude Code or Codex CLI/m);
  });

  test('an unknown command exits 2 with the help', () => {
    const r = cli(['frobnicate'], tempHome());
    assert.equal(r.status, 2);
    assert.match(r.stderr, /unknown command/);
  });

  test('`token` prints the bootstrap token again; with none it says where it looked', async () => {
    const home = tempHome();
    const none = cli(['token'], home);
    assert.equal(none.status, 1);
    assert.equal(none.stdout, '');
    // From the source through tsx, whatever dist/ holds: the one full start of that path in the suite.
    const svc = await startService({ home, bin: BIN });
    await svc.stop();
    const r = cli(['token'], home);
    assert.equal(r.status, 0);
    assert.equal(r.stdout.trim(), svc.adminToken);
  });

  test('`token` without SWITCHYARD_HOME finds the data directory of the service that is running', async () => {
    const home = tempHome();
    const state = join(home, 'state');
    const svc = await startService({ home });
    try {
      // The CLI in another shell: neither SWITCHYARD_HOME nor the port repeated.
      const env: NodeJS.ProcessEnv = { ...process.env, XDG_STATE_HOME: state, XDG_DATA_HOME: join(home, 'elsewhere') };
      delete env.SWITCHYARD_HOME;
      delete env.SWITCHYARD_PORT;
      const found = spawnSync(process.execPath, [BIN, 'token'], { env, encoding: 'utf8' });
      assert.equal(found.status, 0, found.stderr);
      assert.equal(found.stdout.trim(), svc.adminToken);
      const byPort = spawnSync(process.execPath, [BIN, 'token'], {
        env: { ...env, SWITCHYARD_PORT: String(svc.port) },
        encoding: 'utf8',
      });
      assert.equal(byPort.stdout.trim(), svc.adminToken);
    } finally {
      await svc.stop();
    }
    // Stopped: nothing to point at, so the default data directory (empty here) is read, and said so.
    const env: NodeJS.ProcessEnv = { ...process.env, XDG_STATE_HOME: state, XDG_DATA_HOME: join(home, 'elsewhere') };
    delete env.SWITCHYARD_HOME;
    const gone = spawnSync(process.execPath, [BIN, 'token'], { env, encoding: 'utf8' });
    assert.equal(gone.status, 1);
    assert.match(gone.stderr, /No token file at .*elsewhere/);
  });

  test('`npm start` prints where to find the token and serves /health', async () => {
    const home = tempHome();
    const child = spawn('npm', ['start', '--silent'], {
      cwd: ROOT,
      env: { ...process.env, SWITCHYARD_HOME: home, SWITCHYARD_PORT: '0' },
      stdio: ['ignore', 'pipe', 'pipe'],
      // Its own process group: npm does not pass SIGTERM on to the service it started.
      detached: true,
    });
    let err = '';
    child.stderr.setEncoding('utf8').on('data', (d: string) => (err += d));
    try {
      const port = await new Promise<number>((resolve, reject) => {
        // `npm start` compiles into dist/ first when the source changed since the last build.
        const timer = setTimeout(() => reject(new Error(`no start: ${err}`)), 60_000);
        child.stderr.on('data', () => {
          const m = /listening on http:\/\/127\.0\.0\.1:(\d+)/.exec(err);
          if (m && err.includes('token')) {
            clearTimeout(timer);
            resolve(Number(m[1]));
          }
        });
      });
      assert.ok(err.includes(`${home}/token`), err);
      const health = await rawRequest(port, 'GET', '/health');
      assert.equal(health.status, 200);
      const ids = ['x-service-request-id', 'x-request-id', 'request-id'].map((h) => health.headers[h]);
      assert.ok(ids[0]);
      assert.deepEqual(ids, [ids[0], ids[0], ids[0]]);
    } finally {
      const exited = new Promise((r) => child.on('exit', r));
      process.kill(-child.pid!, 'SIGTERM');
      await exited;
    }
  });
});
