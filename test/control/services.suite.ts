import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { pino } from 'pino';
import { createEventBus } from '../../control/events.ts';
import { TIMING } from '../../control/llama-server-process.ts';
import { createServices } from '../../control/services.ts';
import { auditRepo } from '../../store/audit-repo.ts';
import { openStoreEnv } from '../../store/env.ts';
import { type ServiceRecord, serviceRepo } from '../../store/service-repo.ts';
import type { ModelLibrary } from '../../workers/runtime/library-watch.ts';
import { answered, assertNotFound, auditedActions, race } from '../helpers/races.ts';
import { removeDirs, tempDataDir } from '../helpers/usage.ts';

// A start, stop or restart of a supervised llama-server racing its removal (W4.6 item 1): the record must not
// come back (the next start of the service would run it again), and no process may be started for it.

const dirs: string[] = [];
after(() => removeDirs(dirs));
const actor = { actorType: 'system', actorId: 'test' } as const;
const stored: ServiceRecord = {
  id: 'llamacpp-1',
  kind: 'llamacpp',
  displayName: 'llama-server',
  model: 'qwen.gguf',
  tuning: {},
  port: 1,
  binary: null,
  desired: 'stopped',
  pid: null,
  createdAt: 1,
  updatedAt: 1,
};

async function started(dir = tempDataDir(dirs)) {
  const env = openStoreEnv(dir);
  const services = createServices({
    env,
    repo: serviceRepo(env),
    audit: auditRepo(env),
    bus: createEventBus(),
    // No model in the library: a start that got through would be refused, never spawn anything.
    library: { lookup: () => undefined } as unknown as ModelLibrary,
    modelsDirectory: () => dir,
    tuning: () => ({ contextSize: 0, threads: 0, gpuLayers: 0, parallel: 0, batchSize: 0 }),
    embeddedLoaded: async () => 0,
    timing: TIMING,
    processEnv: { PATH: '' },
    log: pino({ level: 'silent' }),
    ownPort: () => null,
  });
  await services.boot();
  return { dir, env, services };
}

async function withService() {
  const dir = tempDataDir(dirs);
  const env = openStoreEnv(dir);
  await env.commit(() => serviceRepo(env).stagePut(stored));
  await env.close();
  return started(dir);
}

/** Only the embedded runtime is listed, nothing is stored, and so after the store is reopened. */
async function assertRemoved(world: Awaited<ReturnType<typeof started>>) {
  assert.deepEqual(
    (await world.services.list()).map((s) => s.id),
    ['embedded'],
  );
  assert.deepEqual(serviceRepo(world.env).all(), []);
  await world.services.close();
  await world.env.close();
  const again = await started(world.dir);
  try {
    assert.deepEqual(
      (await again.services.list()).map((s) => s.id),
      ['embedded'],
    );
  } finally {
    await again.services.close();
    await again.env.close();
  }
}

for (const verb of ['start', 'stop', 'restart'] as const) {
  test(`a ${verb} after the removal began answers NOT_FOUND and writes nothing (W4.6)`, async () => {
    const world = await withService();
    const [removed, changed] = await race(
      () => world.services.remove(stored.id, actor, 'req_1'),
      (): Promise<unknown> => world.services[verb](stored.id, actor, 'req_2'),
    );
    answered(removed);
    assertNotFound(changed, /^No service with ID `llamacpp-1`/);
    assert.deepEqual(auditedActions(world.env, stored.id), ['service.delete']);
    await assertRemoved(world);
  });
}

test('a removal racing an earlier start ends removed, and the start runs no process (W4.6)', async () => {
  const world = await withService();
  const [startedFirst, removed] = await race(
    () => world.services.start(stored.id, actor, 'req_1'),
    () => world.services.remove(stored.id, actor, 'req_2'),
  );
  // The start's commit lands first; by then the removal is stopping the service for good.
  assertNotFound(startedFirst, /^No service with ID `llamacpp-1`/);
  assert.equal(answered(removed).state, 'stopped');
  assert.deepEqual(auditedActions(world.env, stored.id), ['service.start', 'service.delete']);
  await assertRemoved(world);
});
