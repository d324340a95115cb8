import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import type { GaugeActivityBucket, GaugeReading } from '../../protocol/gauge.ts';
import { openStoreEnv } from '../../store/env.ts';
import { gaugeDataRepo } from '../../store/gauge-data-repo.ts';
import { removeDirs, tempDataDir } from '../helpers/usage.ts';

// History and activity keys: an account ID of a user-created account (31 characters) or one carrying a
// person's provider ID (any characters) finds its history again, and keys of the first layout (joined with
// U+0000, which lmdb-js read back as arrays for longer keys) are rewritten at start without losing a row.

const dirs: string[] = [];
after(() => removeDirs(dirs));

const reading = (accountId: string, collectedAt: string): GaugeReading => ({
  accountId,
  providerId: 'openrouter',
  collectedAt,
  source: 'polled',
  confidence: 'high',
  windows: [],
  spend: null,
  credits: null,
});

const bucket = (sourceId: string, hour: string): GaugeActivityBucket => ({
  hour,
  sourceId,
  providerId: 'claude-code',
  model: 'm',
  project: null,
  workspace: null,
  session: null,
  requests: 1,
  inputTokens: 5,
  outputTokens: 1,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
});

async function fresh() {
  const env = openStoreEnv(tempDataDir(dirs));
  return { env, data: gaugeDataRepo(env) };
}

test('history of a user account and of a live-headers account with odd characters reads back', async () => {
  const { env, data } = await fresh();
  const acct = 'acct_01JABCDEFGHJKMNPQRSTVWXYZ0';
  const odd = 'live-headers.a|b\u0001c:d';
  await env.commit(() => {
    data.stageReading(acct, reading(acct, '2026-11-24T10:15:00.000Z'));
    data.stageReading(acct, reading(acct, '2026-11-24T11:15:00.000Z'));
    data.stageReading('live-headers', reading(odd, '2026-11-24T10:20:00.000Z'));
  });
  const rows = [...data.history(Date.parse('2026-11-24T00:00:00Z'), [acct, 'live-headers'])];
  assert.deepEqual(
    rows.map((r) => [r.sourceId, r.hour, r.accountId]),
    [
      [acct, '2026-11-24T10:00:00.000Z', acct],
      [acct, '2026-11-24T11:00:00.000Z', acct],
      ['live-headers', '2026-11-24T10:00:00.000Z', odd],
    ],
  );
  // `since` cuts at the hour.
  assert.equal([...data.history(Date.parse('2026-11-24T11:00:00Z'), [acct])].length, 1);
  assert.equal(await data.prune(Date.parse('2026-11-24T11:00:00Z')), 2);
  assert.equal(await data.removeHistory(acct), 1);
  await env.close();
});

test('keys of the first layout are rewritten once, history and activity intact', async () => {
  const { env, data } = await fresh();
  const acct = 'acct_01JABCDEFGHJKMNPQRSTVWXYZ0';
  const history = env.db<GaugeReading>('gauge-history');
  const activity = env.db<GaugeActivityBucket>('gauge-activity');
  const hour = '2026-11-24T10:00:00.000Z';
  await env.commit(() => {
    history.put(`${acct}\u0000${hour}\u0000${acct}`, reading(acct, '2026-11-24T10:05:00.000Z'));
    history.put(`service\u0000${hour}\u0000service`, reading('service', '2026-11-24T10:06:00.000Z'));
    activity.put(`${hour}\u0000${acct}\u0000abcdefghijklmnopqrstuv`, bucket(acct, hour));
  });
  assert.equal([...data.history(0, [acct])].length, 0, 'the first layout hides this history (the bug)');

  assert.equal(await data.upgradeKeys(), 3);
  assert.equal(await data.upgradeKeys(), 0, 'a second start finds nothing to rewrite');
  assert.deepEqual(
    [...data.history(0, [acct, 'service'])].map((r) => [r.sourceId, r.accountId]),
    [
      [acct, acct],
      ['service', 'service'],
    ],
  );
  assert.equal(data.activityCount(), 1);
  // A bucket of the same hour and dimensions adds to the rewritten one instead of beside it.
  await env.commit(() => data.stageActivity([bucket(acct, hour)]));
  assert.equal(data.activityCount(), 1);
  assert.equal([...activity.getRange()][0]!.value.requests, 2);
  await env.close();
});
