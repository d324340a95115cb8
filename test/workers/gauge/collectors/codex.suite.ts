import assert from 'node:assert/strict';
import { statSync, utimesSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { GaugeActivityBucket, GaugeWindow } from '../../../../protocol/gauge.ts';
import { createCodexCollector, defaultRoots } from '../../../../workers/gauge/collectors/codex/index.ts';
import type { CollectResult } from '../../../../workers/gauge/collectors/types.ts';
import {
  IDENTITY,
  appendRaw,
  codexMeta,
  codexTokenCount,
  codexTurn,
  context,
  line,
  removeTrees,
  tempTree,
  writeLog,
} from '../../../helpers/agent-logs.ts';

// A generated Codex tree: two sessions on two days and two models, a repeated token_count event, an event
// with only cumulative totals, rate-limit windows in both formats Codex has written (resets_at, and the older
// resets_in_seconds). Every expected figure is counted by hand from the lines below.

const API = '/home/alice/src/api';
const WEB = '/home/alice/src/web';
const T0 = Date.parse('2026-11-24T12:00:00Z');
const RESET_5H = Date.parse('2026-11-24T14:00:00Z') / 1000;
const collector = createCodexCollector({ identity: IDENTITY });
const NEXT = line(
  codexTokenCount({
    at: '2026-11-24T12:15:00.000Z',
    total: { input: 3100, cached: 1500, output: 550, reasoning: 200 },
    last: { input: 100, cached: 0, output: 50, reasoning: 0 },
    primary: { used: 30, minutes: 300, resetsAt: RESET_5H },
    secondary: { used: 42, minutes: 10080, resetsIn: 82_000 },
  }),
);
const HALF = 150;

type Row = Omit<GaugeActivityBucket, 'sourceId' | 'providerId' | 'workspace'>;
const row = (
  hour: string,
  model: string,
  project: string,
  session: string,
  requests: number,
  inputTokens: number,
  outputTokens: number,
  cacheReadTokens: number,
  reasoningTokens: number,
): Row => ({
  hour,
  model,
  project,
  session,
  requests,
  inputTokens,
  outputTokens,
  cacheReadTokens,
  cacheWriteTokens: 0,
  reasoningTokens,
});

function rows(result: CollectResult): Row[] {
  return (result.activity ?? [])
    .map(({ sourceId: _s, providerId: _p, workspace: _w, ...rest }) => rest)
    .sort((a, b) => a.hour.localeCompare(b.hour));
}

const windowsById = (result: CollectResult): Record<string, GaugeWindow> =>
  Object.fromEntries((result.readings[0]?.windows ?? []).map((w) => [w.id, w]));

describe('codex collector', () => {
  const dirs: string[] = [];
  let root = '';
  let first = '';
  let state: unknown = null;
  const collect = (now: string) => collector.collect(context('codex', { paths: [root] }, new Date(now), state));

  before(() => {
    root = join(tempTree(dirs, 'codex'), 'sessions');
    first = join(root, '2026', '11', '24', 'rollout-2026-11-24T10-00-00-0199a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b.jsonl');
    writeLog(
      first,
      [
        codexMeta({ id: 'cx-1', at: '2026-11-24T10:00:00.000Z', cwd: API }),
        codexTurn({ at: '2026-11-24T10:00:00.500Z', model: 'gpt-5-codex', cwd: API }),
        codexTokenCount({ at: '2026-11-24T10:00:01.000Z', primary: { used: 10, minutes: 300, resetsAt: RESET_5H } }),
        codexTokenCount({
          at: '2026-11-24T10:01:00.000Z',
          total: { input: 1000, cached: 200, output: 300, reasoning: 100 },
          last: { input: 1000, cached: 200, output: 300, reasoning: 100 },
        }),
        // The same event again (only the rate limits moved): not a second call.
        codexTokenCount({
          at: '2026-11-24T10:01:05.000Z',
          total: { input: 1000, cached: 200, output: 300, reasoning: 100 },
          last: { input: 1000, cached: 200, output: 300, reasoning: 100 },
          primary: { used: 11, minutes: 300, resetsAt: RESET_5H },
        }),
        codexTokenCount({
          at: '2026-11-24T11:20:00.000Z',
          total: { input: 3000, cached: 1500, output: 500, reasoning: 200 },
          last: { input: 2000, cached: 1300, output: 200, reasoning: 100 },
          primary: { used: 25, minutes: 300, resetsAt: RESET_5H },
          secondary: { used: 41, minutes: 10080, resetsIn: 86_400 },
        }),
        '{"timestamp":"2026-11-24T11:21:00.000Z","type":"event_msg","payload":',
      ],
      T0,
    );
    // Codex is still writing the next event: half of it is on disk.
    appendRaw(first, NEXT.slice(0, HALF));
    utimesSync(first, T0 / 1000, T0 / 1000);
    writeLog(
      join(root, '2026', '11', '23', 'rollout-2026-11-23T22-00-00-0199a1b2-0000-7e5f-8a9b-0c1d2e3f4a5b.jsonl'),
      [
        codexMeta({ id: 'cx-2', at: '2026-11-23T22:00:00.000Z', cwd: WEB }),
        codexTurn({ at: '2026-11-23T22:00:01.000Z', model: 'gpt-5', cwd: WEB }),
        // Only the cumulative totals: the first event of a session is all of it.
        codexTokenCount({
          at: '2026-11-23T22:10:00.000Z',
          total: { input: 500, cached: 0, output: 50, reasoning: 0 },
          primary: { used: 99, minutes: 300, resetsAt: RESET_5H },
        }),
      ],
      T0 - 60_000,
    );
    // Not a rollout file: never read.
    writeLog(
      join(root, '2026', '11', '24', 'history.jsonl'),
      [codexTokenCount({ at: '2026-11-24T10:01:00.000Z', total: { input: 9, cached: 0, output: 9, reasoning: 0 } })],
      T0,
    );
  });
  after(() => removeTrees(dirs));

  it('counts each model call once from token_count events, splitting cached input and reasoning out', async () => {
    const result = await collect('2026-11-24T12:30:00.000Z');
    assert.deepEqual(rows(result), [
      row('2026-11-23T22:00:00.000Z', 'gpt-5', 'web', 'cx-2', 1, 500, 50, 0, 0),
      // Output includes reasoning, as the meter counts it (docs/api.md, Usage); reasoning is the part of it.
      row('2026-11-24T10:00:00.000Z', 'gpt-5-codex', 'api', 'cx-1', 1, 800, 300, 200, 100),
      row('2026-11-24T11:00:00.000Z', 'gpt-5-codex', 'api', 'cx-1', 1, 700, 200, 1300, 100),
    ]);
    const w = windowsById(result);
    assert.deepEqual([w['tokens-5h']?.used, w['tokens-day']?.used, w['tokens-7d']?.used], [3500, 3500, 4050]);
    assert.deepEqual(result.counters?.['duplicates'], 1);
    assert.deepEqual(result.counters?.['linesMalformed'], 1);
    assert.deepEqual(result.counters?.['files'], 2);
    const text = JSON.stringify([result, result.state]);
    for (const secret of [root, '/home/alice', 'alice']) assert.ok(!text.includes(secret), secret);
    state = result.state;
  });

  it('turns the newest rate-limit event into utilization windows with their reset times', async () => {
    const result = await collect('2026-11-24T12:30:00.000Z');
    const w = windowsById(result);
    assert.deepEqual(w['primary'], {
      id: 'primary',
      kind: 'utilization',
      period: '5h',
      used: 25,
      limit: 100,
      remaining: 75,
      utilization: 0.25,
      resetsAt: '2026-11-24T14:00:00.000Z',
    });
    // resets_in_seconds counts from the event's own timestamp (11:20), not from when we read it.
    assert.deepEqual(w['secondary'], {
      id: 'secondary',
      kind: 'utilization',
      period: '7d',
      used: 41,
      limit: 100,
      remaining: 59,
      utilization: 0.41,
      resetsAt: '2026-11-25T11:20:00.000Z',
    });
    assert.equal(result.readings[0]?.source, 'local_logs');
    assert.deepEqual(result.activity, []);
  });

  it('reads only the appended bytes, and the half-written line it kept back, now finished', async () => {
    const before = statSync(first).size;
    const appended = appendRaw(first, NEXT.slice(HALF));
    const result = await collect('2026-11-24T12:40:00.000Z');
    assert.deepEqual(rows(result), [row('2026-11-24T12:00:00.000Z', 'gpt-5-codex', 'api', 'cx-1', 1, 100, 50, 0, 0)]);
    // The half line kept back last time is read again, now whole.
    assert.equal(result.counters?.['bytesRead'], HALF + appended);
    assert.equal(statSync(first).size, before + appended);
    assert.equal(result.counters?.['linesMalformed'], 0);
    assert.equal(windowsById(result)['primary']?.used, 30);
    assert.equal(windowsById(result)['tokens-day']?.used, 3650);
    state = result.state;
  });

  it('reports a window whose reset time has passed as unknown usage, not as the old figure', async () => {
    const result = await collect('2026-11-24T15:00:00.000Z');
    const w = windowsById(result);
    assert.deepEqual(w['primary'], {
      id: 'primary',
      kind: 'utilization',
      period: '5h',
      used: null,
      limit: 100,
      remaining: null,
      utilization: null,
      resetsAt: null,
    });
    assert.equal(w['secondary']?.used, 42);
  });

  it('defaults to $CODEX_HOME/sessions, else ~/.codex/sessions', () => {
    assert.deepEqual(defaultRoots({ CODEX_HOME: '/opt/codex' }, '/h'), ['/opt/codex/sessions']);
    assert.deepEqual(defaultRoots({}, '/h'), ['/h/.codex/sessions']);
  });
});
