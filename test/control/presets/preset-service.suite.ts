import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { createPresetService } from '../../../control/presets/preset-service.ts';
import { buildCatalog } from '../../../state/catalog-index.ts';
import { auditRepo } from '../../../store/audit-repo.ts';
import { openStoreEnv } from '../../../store/env.ts';
import { presetRepo } from '../../../store/preset-repo.ts';
import { provider, record } from '../../helpers/catalog.ts';
import { answered, assertNotFound, auditedActions, race } from '../../helpers/races.ts';
import { removeDirs, tempDataDir } from '../../helpers/usage.ts';

// A preset change racing the preset's removal (W4.6 item 1) must not bring it back.

const dirs: string[] = [];
after(() => removeDirs(dirs));
const actor = { actorType: 'system', actorId: 'test' } as const;
const catalog = buildCatalog([provider('p1')], [record('p1', 'm')], new Map());

function started(dir = tempDataDir(dirs)) {
  const env = openStoreEnv(dir);
  const presets = createPresetService({ env, presets: presetRepo(env), audit: auditRepo(env), catalog: () => catalog });
  return { dir, env, presets };
}

async function withPreset() {
  const world = started();
  await world.presets.create(
    { slug: 'coder', model: 'p1/m', familyScope: ['styleA.chat_completions'] },
    actor,
    'req_0',
  );
  return world;
}

/** Not listed, not routable, not stored, and none of it after the store is reopened. */
async function assertRemoved(world: ReturnType<typeof started>) {
  assert.deepEqual(world.presets.list(), []);
  assert.equal(world.presets.usable('coder'), null);
  assert.equal(presetRepo(world.env).get('coder'), undefined);
  await world.env.close();
  const again = started(world.dir);
  try {
    assert.deepEqual(again.presets.list(), []);
    assert.equal(again.presets.usable('coder'), null);
  } finally {
    await again.env.close();
  }
}

test('a change racing the removal of its preset answers NOT_FOUND and writes nothing (W4.6)', async () => {
  const world = await withPreset();
  const [removed, changed] = await race(
    () => world.presets.remove('coder', actor, 'req_1'),
    () => world.presets.update('coder', { displayName: 'x' }, actor, 'req_2'),
  );
  answered(removed);
  assertNotFound(changed, /^No preset `coder`/, 'slug');
  assert.deepEqual(auditedActions(world.env, 'coder'), ['preset.create', 'preset.delete']);
  await assertRemoved(world);
});

test('a removal racing an earlier change of its preset still removes it (W4.6)', async () => {
  const world = await withPreset();
  const [changed, removed] = await race(
    () => world.presets.update('coder', { system: 'Be brief.' }, actor, 'req_1'),
    () => world.presets.remove('coder', actor, 'req_2'),
  );
  assert.equal(answered(changed).system, 'Be brief.');
  answered(removed);
  await assertRemoved(world);
});
