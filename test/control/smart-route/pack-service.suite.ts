import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { createCapacityTracker } from '../../../control/capacity.ts';
import { createLatencyTracker } from '../../../control/smart-route/latency.ts';
import { createRoutePackService } from '../../../control/smart-route/pack-service.ts';
import { buildCatalog } from '../../../state/catalog-index.ts';
import { auditRepo } from '../../../store/audit-repo.ts';
import { openStoreEnv } from '../../../store/env.ts';
import { routePackRepo } from '../../../store/route-pack-repo.ts';
import { provider, record } from '../../helpers/catalog.ts';
import { answered, assertNotFound, auditedActions, race } from '../../helpers/races.ts';
import { removeDirs, tempDataDir } from '../../helpers/usage.ts';

// A route pack change racing the pack's removal (W4.6 item 1) must not bring it back.

const dirs: string[] = [];
after(() => removeDirs(dirs));
const actor = { actorType: 'system', actorId: 'test' } as const;
const catalog = buildCatalog([provider('p1')], [record('p1', 'a'), record('p1', 'b')], new Map());

function started(dir = tempDataDir(dirs)) {
  const env = openStoreEnv(dir);
  const packs = createRoutePackService({
    env,
    packs: routePackRepo(env),
    audit: auditRepo(env),
    catalog: () => catalog,
    signals: { capacity: createCapacityTracker(), latency: createLatencyTracker() },
  });
  return { dir, env, packs };
}

async function withPack() {
  const world = started();
  await world.packs.create(
    { slug: 'fast', routes: [{ id: 'a', model: 'p1/a' }], fallback: { model: 'p1/b' } },
    actor,
    'req_0',
  );
  return world;
}

/** Not listed, not routable, not stored, and none of it after the store is reopened. */
async function assertRemoved(world: ReturnType<typeof started>) {
  assert.deepEqual(world.packs.list(), []);
  assert.equal(world.packs.usable('fast'), null);
  assert.equal(routePackRepo(world.env).get('fast'), undefined);
  await world.env.close();
  const again = started(world.dir);
  try {
    assert.deepEqual(again.packs.list(), []);
    assert.equal(again.packs.usable('fast'), null);
  } finally {
    await again.env.close();
  }
}

test('a change racing the removal of its route pack answers NOT_FOUND and writes nothing (W4.6)', async () => {
  const world = await withPack();
  const [removed, changed] = await race(
    () => world.packs.remove('fast', actor, 'req_1'),
    () => world.packs.update('fast', { displayName: 'x' }, actor, 'req_2'),
  );
  answered(removed);
  assertNotFound(changed, /^No route pack `fast`/, 'slug');
  assert.deepEqual(auditedActions(world.env, 'fast'), ['route-pack.create', 'route-pack.delete']);
  await assertRemoved(world);
});

test('a removal racing an earlier change of its route pack still removes it (W4.6)', async () => {
  const world = await withPack();
  const [changed, removed] = await race(
    () => world.packs.update('fast', { maxAttempts: 1 }, actor, 'req_1'),
    () => world.packs.remove('fast', actor, 'req_2'),
  );
  assert.equal(answered(changed).maxAttempts, 1);
  answered(removed);
  await assertRemoved(world);
});
