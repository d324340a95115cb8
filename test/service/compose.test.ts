import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { pino } from 'pino';
import type { ServiceParts } from '../../service/compose.ts';
import { LOCK_FILE } from '../../store/dir-lock.ts';
import { tempHome } from '../helpers/service.ts';

// startService closes what it opened when a family fails to start: the lock, the LMDB environment and every
// worker thread, so that the same process can start again on the same data directory.

const log = pino({ level: 'silent' });
let startService: typeof import('../../service/compose.ts').startService;

before(async () => {
  const state = tempHome();
  // What the spawned test services get (test/helpers/service.ts): the file vault, loopback Gauge hosts, and the
  // instance record kept out of the user's own state directory.
  Object.assign(process.env, {
    SWITCHYARD_VAULT: 'file',
    SWITCHYARD_GAUGE_ALLOWED_HOSTS: 'loopback',
    XDG_STATE_HOME: join(state, 'state'),
  });
  ({ startService } = await import('../../service/compose.ts'));
});

/** This process's OS threads (Linux): a worker thread is one, and ends with its worker. */
const threads = () => Number(/^Threads:\s+(\d+)/m.exec(readFileSync('/proc/self/status', 'utf8'))?.[1]);
const linux = process.platform === 'linux';

let baseline = 0;
test('a start and close on a fresh data directory leave no thread behind', async () => {
  const home = tempHome();
  const service = await startService({ dataDir: home, port: 0, log, edge: 'node' });
  assert.ok(existsSync(join(home, LOCK_FILE)));
  await service.close(0);
  assert.equal(existsSync(join(home, LOCK_FILE)), false);
  if (linux) baseline = threads();
});

for (const failing of ['tokens', 'gauge', 'runtime', 'gateway', 'admin']) {
  test(`a start that fails at the ${failing} family closes everything opened before it`, async () => {
    const home = tempHome();
    let parts: Readonly<Partial<ServiceParts>> | undefined;
    const failure = new Error(`the ${failing} family cannot start`);
    await assert.rejects(
      startService({
        dataDir: home,
        port: 0,
        log,
        edge: 'node',
        beforeFamily(name, built) {
          parts = built;
          if (name === failing) throw failure;
        },
      }),
      (err) => err === failure,
    );
    assert.equal(existsSync(join(home, LOCK_FILE)), false, 'the data-directory lock is released');
    assert.equal(parts!.env!.isOpen(), false, 'the LMDB environment is closed');
    assert.equal((parts!.env!.root as unknown as { status: string }).status, 'closed');
    if (linux)
      assert.ok(threads() <= baseline, `${threads()} threads after the failed start, ${baseline} after a clean close`);
    // The same process starts again on the same data directory.
    const again = await startService({ dataDir: home, port: 0, log, edge: 'node' });
    await again.close(0);
  });
}

after(() => {
  if (linux) assert.ok(threads() <= baseline);
});
