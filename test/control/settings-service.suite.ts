import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { createSettingsService } from '../../control/settings-service.ts';
import type { StoredSettings } from '../../protocol/http/settings.ts';
import { auditRepo } from '../../store/audit-repo.ts';
import { openStoreEnv } from '../../store/env.ts';
import { settingsRepo } from '../../store/settings-repo.ts';
import { answersAfterAcknowledgement, heldFollower } from '../helpers/held-follower.ts';
import { removeDirs, tempDataDir } from '../helpers/usage.ts';

const dirs: string[] = [];
after(() => removeDirs(dirs));

test('a settings change answers once its follower has it: every edge thread before the next request', async () => {
  const env = openStoreEnv(tempDataDir(dirs));
  try {
    const seen: StoredSettings[] = [];
    const held = heldFollower((next: StoredSettings) => seen.push(next));
    const settings = createSettingsService({
      env,
      repo: settingsRepo(env),
      audit: auditRepo(env),
      listener: { host: '127.0.0.1', port: 0, networkExposed: false },
      vault: { backend: 'file', keyStorage: 'file', reason: null },
      onChange: held.follow,
    });
    const origins = { cors: { allowedOrigins: ['http://localhost:5173'] } };
    await answersAfterAcknowledgement(settings.patch(origins, { actorType: 'system', actorId: 't' }, 'r'), held);
    assert.deepEqual(seen.at(-1)?.cors.allowedOrigins, ['http://localhost:5173']);
  } finally {
    await env.close();
  }
});
