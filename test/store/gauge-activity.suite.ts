import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { GaugeActivityBucket } from '../../protocol/gauge.ts';
import { openStoreEnv, type StoreEnv } from '../../store/env.ts';
import { activityQuery, hourBounds, overlaps, type ActivityOrigin } from '../../store/gauge-activity.ts';
import { gaugeDataRepo } from '../../store/gauge-data-repo.ts';
import { removeDirs, tempDataDir } from '../helpers/usage.ts';

// The activity query's hour arithmetic: buckets overlapping [after, before), exact outer boundaries excluded,
// newest first over a reverse key-range scan, paging and every filter.

const H = 3_600_000;
const T0 = Date.parse('2026-03-10T00:00:00Z');
const at = (hours: number) => T0 + hours * H;

const bucket = (hour: number, over: Partial<GaugeActivityBucket> = {}): GaugeActivityBucket => ({
  hour: new Date(at(hour)).toISOString(),
  sourceId: 'claude-code',
  providerId: 'claude-code',
  model: 'claude-sonnet-4-5',
  project: 'app',
  workspace: 'w-aaaa',
  session: 's1',
  requests: 1,
  inputTokens: 10 * (hour + 1),
  outputTokens: 1,
  cacheReadTokens: 0,
  cacheWriteTokens: 0,
  reasoningTokens: 0,
  ...over,
});

const ORIGINS: Record<string, ActivityOrigin> = {
  'claude-code': 'local_logs',
  codex: 'local_logs',
  service: 'service',
};
const originOf = (id: string) => ORIGINS[id] ?? null;

const dirs: string[] = [];
let env: StoreEnv;
let query: ReturnType<typeof activityQuery>;

before(async () => {
  env = openStoreEnv(tempDataDir(dirs));
  const data = gaugeDataRepo(env);
  await env.commit(() =>
    data.stageActivity([
      bucket(0),
      bucket(1),
      bucket(2),
      bucket(3),
      bucket(1, { sourceId: 'codex', providerId: 'codex', model: 'gpt-5-codex', session: 's2', workspace: 'w-bbbb' }),
      bucket(2, {
        sourceId: 'service',
        providerId: 'service',
        model: 'pa/gpt-test',
        project: null,
        workspace: null,
        session: null,
      }),
      // A deleted source's leftover: never shown.
      bucket(2, { sourceId: 'acct_gone' }),
    ]),
  );
  query = activityQuery(env);
});
after(async () => {
  await env.close();
  removeDirs(dirs);
});

const hours = (after: number, before: number, filter = {}) =>
  query({ after, before }, filter, 200, 0, originOf).data.map((b) => `${(Date.parse(b.hour) - T0) / H}:${b.sourceId}`);

describe('hour arithmetic', () => {
  test('an hour overlaps [after, before) unless it ends at after or starts at before', () => {
    const r = { after: at(1), before: at(3) };
    assert.deepEqual(
      [0, 1, 2, 3].map((h) => overlaps(at(h), r)),
      [false, true, true, false],
    );
    const mid = { after: at(1) + 1, before: at(3) - 1 };
    assert.deepEqual(
      [0, 1, 2, 3].map((h) => overlaps(at(h), mid)),
      [false, true, true, false],
    );
    assert.deepEqual(
      [0, 1, 2, 3].map((h) => overlaps(at(h), { after: at(1) - 1, before: at(3) + 1 })),
      [true, true, true, true],
    );
    assert.deepEqual(hourBounds({ after: at(1) + 1, before: at(3) - 1 }), {
      first: new Date(at(1)).toISOString(),
      end: new Date(at(3)).toISOString(),
    });
  });
});

describe('the query', () => {
  test('exact hour boundaries: the hour starting at before and the hour ending at after are left out', () => {
    assert.deepEqual(hours(at(1), at(3)), ['2:service', '2:claude-code', '1:codex', '1:claude-code']);
  });

  test('one millisecond past each boundary takes in the neighbouring hour', () => {
    assert.deepEqual(hours(at(1) - 1, at(3) + 1), [
      '3:claude-code',
      '2:service',
      '2:claude-code',
      '1:codex',
      '1:claude-code',
      '0:claude-code',
    ]);
    assert.deepEqual(
      hours(at(2) + 1, at(2) + 2),
      ['2:service', '2:claude-code'],
      'a range inside one hour selects that hour',
    );
  });

  test('counters come back as stored; a source that no longer exists is skipped', () => {
    const row = query({ after: at(3), before: at(4) }, {}, 10, 0, originOf).data[0]!;
    assert.equal(row.inputTokens, 40);
    assert.equal(row.accountId, 'claude-code');
    assert.equal(row.source, 'local_logs');
    assert.ok(!hours(at(0), at(4)).some((h) => h.endsWith('acct_gone')));
  });

  test('pages newest first with hasMore', () => {
    const r = { after: at(0), before: at(4) };
    const first = query(r, {}, 2, 0, originOf);
    assert.deepEqual(
      first.data.map((b) => b.hour),
      [new Date(at(3)).toISOString(), new Date(at(2)).toISOString()],
    );
    assert.equal(first.hasMore, true);
    const last = query(r, {}, 2, 4, originOf);
    assert.equal(last.data.length, 2);
    assert.equal(last.hasMore, false);
    assert.deepEqual(query(r, {}, 2, 6, originOf).data, []);
  });

  test('every filter narrows', () => {
    const all = [at(0), at(4)] as const;
    assert.deepEqual(hours(...all, { sourceId: 'codex' }), ['1:codex']);
    assert.deepEqual(hours(...all, { accountId: 'service' }), ['2:service']);
    assert.deepEqual(hours(...all, { providerId: 'codex' }), ['1:codex']);
    assert.deepEqual(hours(...all, { source: 'service' }), ['2:service']);
    assert.deepEqual(hours(...all, { model: 'gpt-5-codex' }), ['1:codex']);
    assert.deepEqual(hours(...all, { project: 'app', session: 's1' }), [
      '3:claude-code',
      '2:claude-code',
      '1:claude-code',
      '0:claude-code',
    ]);
    assert.deepEqual(hours(...all, { workspace: 'w-bbbb' }), ['1:codex']);
    assert.deepEqual(hours(...all, { session: 'nope' }), []);
  });
});
