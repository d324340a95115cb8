import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { createSettingsService } from '../../control/settings-service.ts';
import type { StoredSettings } from '../../protocol/http/settings.ts';
import { auditRepo } from '../../store/audit-repo.ts';
import { openStoreEnv } from '../../store/env.ts';
import { settingsRepo } from '../../store/settings-repo.ts';
import { removeDirs, tempDataDir } from '../helpers/usage.ts';

const dirs: string[] = [];
after(() => removeDirs(dirs));

test('a settings change answers once its follower has it: every edge thread before the next request', async () => {
  const env = openStoreEnv(tempDataDir(dirs));
  try {
    let acknowledge!: () => void;
    let told!: () => void;
    const toldFollower = new Promise<void>((resolve) => (told = resolve));
    const seen: StoredSettings[] = [];
    const settings = createSettingsService({
      env,
      repo: settingsRepo(env),
      audit: auditRepo(env),
      listener: { host: '127.0.0.1', port: 0, networkExposed: false },
      vault: { backend: 'file', keyStorage: 'file', reason: null },
      onChange: (next) =>
        seen.length === 0
          ? void seen.push(next)
          : new Promise<void>((resolve) => {
              acknowledge = () => {
                seen.push(next);
                resolve();
              };
              told();
            }),
    });
    let answered = false;
    const patching = settings
      .patch({ cors: { allowedOrigins: ['http://localhost:5173'] } }, { actorType: 'system', actorId: 't' }, 'r')
      .then(() => (answered = true));
    await toldFollower;
    for (let turn = 0; turn < 20; turn++) await new Promise((r) => setImmediate(r));
    assert.equal(answered, false, 'the change answered before its follower had it');
    acknowledge();
    await patching;
    assert.deepEqual(seen.at(-1)?.cors.allowedOrigins, ['http://localhost:5173']);
  } finally {
    await env.close();
  }
});
