import assert from 'node:assert/strict';
import { renameSync, statSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { GaugeActivityBucket } from '../../../../protocol/gauge.ts';
import { createClaudeCodeCollector, defaultRoots } from '../../../../workers/gauge/collectors/claude-code/index.ts';
import { CollectorError, type CollectResult } from '../../../../workers/gauge/collectors/types.ts';
import {
  IDENTITY,
  appendRaw,
  claudeAssistant,
  claudeUser,
  context,
  line,
  removeTrees,
  tempTree,
  writeLog,
} from '../../../helpers/agent-logs.ts';

// A generated Claude Code tree with streamed and copied messages, three sessions in two projects, three
// models and two days; every expected figure below is counted by hand from the lines written here.

const SONNET = 'claude-sonnet-4-5-20250929';
const OPUS = 'claude-opus-4-1-20250805';
const HAIKU = 'claude-haiku-4-5-20251001';
const APP = '/home/alice/work/app';
const T0 = Date.parse('2026-11-24T12:00:00Z');
const collector = createClaudeCodeCollector({ identity: IDENTITY });

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
  cacheWriteTokens: number,
): Row => ({
  hour,
  model,
  project,
  session,
  requests,
  inputTokens,
  outputTokens,
  cacheReadTokens,
  cacheWriteTokens,
  reasoningTokens: 0,
});

function rows(result: CollectResult): Row[] {
  return (result.activity ?? [])
    .map(({ sourceId: _s, providerId: _p, workspace: _w, ...rest }) => rest)
    .sort((a, b) => `${a.hour}${a.session}${a.model}`.localeCompare(`${b.hour}${b.session}${b.model}`));
}

function windows(result: CollectResult): Record<string, number | null> {
  return Object.fromEntries((result.readings[0]?.windows ?? []).map((w) => [w.id, w.used]));
}

const a1 = { id: 'msg_A1', requestId: 'req_A1', model: SONNET, session: 'sess-a', cwd: APP };
const a3 = {
  id: 'msg_A3',
  requestId: 'req_A3',
  model: OPUS,
  session: 'sess-a',
  cwd: APP,
  at: '2026-11-24T11:10:00.000Z',
};
const a2 = {
  id: 'msg_A2',
  requestId: 'req_A2',
  uuid: 'u-a3',
  model: SONNET,
  session: 'sess-a',
  cwd: APP,
  at: '2026-11-24T10:30:00.000Z',
  usage: { input: 20, output: 30, cacheWrite: 0, cacheRead: 2000 },
};
const b1 = {
  id: 'msg_B1',
  requestId: 'req_B1',
  uuid: 'u-b1',
  model: SONNET,
  session: 'sess-b',
  cwd: APP,
  at: '2026-11-24T12:00:00.000Z',
  usage: { input: 7, output: 11, cacheWrite: 0, cacheRead: 400 },
};

describe('claude-code collector', () => {
  const dirs: string[] = [];
  let root = '';
  let sessA = '';
  let sessB = '';
  let sessC = '';
  let state: unknown = null;
  const collect = (now: string, c = collector) =>
    c.collect(context('claude-code', { paths: [root] }, new Date(now), state));

  before(() => {
    const base = tempTree(dirs, 'claude');
    root = join(base, 'projects');
    sessA = join(root, '-home-alice-work-app', 'sess-a.jsonl');
    sessB = join(root, '-home-alice-work-app', 'sess-b.jsonl');
    sessC = join(root, '-home-alice', 'sess-c.jsonl');
    writeLog(
      sessA,
      [
        claudeUser({ uuid: 'u-a0', at: '2026-11-24T10:04:00.000Z', session: 'sess-a', cwd: APP }),
        // One streamed message written twice: the partial line, then the final one with the real output count.
        claudeAssistant({
          ...a1,
          uuid: 'u-a1',
          at: '2026-11-24T10:05:00.000Z',
          usage: { input: 10, output: 1, cacheWrite: 100, cacheRead: 1000 },
          stop: null,
        }),
        claudeAssistant({
          ...a1,
          uuid: 'u-a2',
          at: '2026-11-24T10:05:03.000Z',
          usage: { input: 10, output: 50, cacheWrite: 100, cacheRead: 1000 },
          stop: 'tool_use',
        }),
        claudeAssistant(a2),
        claudeAssistant({ ...a3, uuid: 'u-a4', usage: { input: 5, output: 70, cacheWrite: 300, cacheRead: 500 } }),
        '{not json',
      ],
      T0,
    );
    // A resumed session: a copy of msg_A2 from sess-a, then its own message.
    writeLog(sessB, [claudeAssistant({ ...a2, session: 'sess-b' }), claudeAssistant(b1)], T0 + 1000);
    writeLog(
      sessC,
      [
        claudeAssistant({
          id: 'msg_C1',
          requestId: 'req_C1',
          uuid: 'u-c1',
          model: HAIKU,
          session: 'sess-c',
          cwd: '/home/alice',
          at: '2026-11-23T23:50:00.000Z',
          usage: { input: 3, output: 4, cacheWrite: 0, cacheRead: 0 },
        }),
        claudeAssistant({
          id: 'msg_S',
          uuid: 'u-s',
          model: '<synthetic>',
          session: 'sess-c',
          cwd: '/home/alice',
          at: '2026-11-23T23:51:00.000Z',
          usage: { input: 0, output: 0, cacheWrite: 0, cacheRead: 0 },
        }),
        // No message ID: the line UUID identifies it, and its copy.
        claudeAssistant({
          uuid: 'u-c2',
          model: HAIKU,
          session: 'sess-c',
          cwd: '/home/alice',
          at: '2026-11-23T23:55:00.000Z',
          usage: { input: 1, output: 2, cacheWrite: 0, cacheRead: 0 },
        }),
        claudeAssistant({
          uuid: 'u-c2',
          model: HAIKU,
          session: 'sess-c',
          cwd: '/home/alice',
          at: '2026-11-23T23:55:00.000Z',
          usage: { input: 1, output: 2, cacheWrite: 0, cacheRead: 0 },
        }),
      ],
      T0 - 1000,
    );
    writeLog(join(root, '-home-alice-work-app', 'not-a-log.jsonl'), ['hello world', 'second line'], T0);
    writeLog(join(root, 'notes.txt'), [claudeAssistant({ ...b1, id: 'msg_TXT' })], T0);
    const elsewhere = join(tempTree(dirs, 'claude-outside'), 'secret.jsonl');
    writeLog(elsewhere, [claudeAssistant({ ...b1, id: 'msg_OUT' })], T0);
    symlinkSync(elsewhere, join(root, 'outside.jsonl'));
    symlinkSync(sessA, join(root, 'inside-link.jsonl'));
    symlinkSync(join(root, 'missing-target.jsonl'), join(root, 'broken.jsonl'));
  });
  after(() => removeTrees(dirs));

  it('counts each message once, with its final output, into hourly buckets per session and model', async () => {
    const result = await collect('2026-11-24T12:30:00.000Z');
    assert.deepEqual(rows(result), [
      row('2026-11-23T23:00:00.000Z', HAIKU, '~', 'sess-c', 2, 4, 6, 0, 0),
      row('2026-11-24T10:00:00.000Z', SONNET, 'app', 'sess-a', 2, 30, 80, 3000, 100),
      row('2026-11-24T11:00:00.000Z', OPUS, 'app', 'sess-a', 1, 5, 70, 500, 300),
      row('2026-11-24T12:00:00.000Z', SONNET, 'app', 'sess-b', 1, 7, 11, 400, 0),
    ]);
    const workspaces = new Set(result.activity?.map((b) => b.workspace));
    assert.equal(workspaces.size, 2, 'the app folder and the home folder');
    for (const w of workspaces) assert.match(w ?? '', /^w-[A-Za-z0-9_-]{10}$/);
    assert.deepEqual(windows(result), { 'tokens-5h': 4503, 'tokens-day': 4503, 'tokens-7d': 4513 });
    assert.equal(result.readings[0]?.windows[1]?.resetsAt, '2026-11-25T00:00:00.000Z');
    assert.equal(result.readings[0]?.source, 'local_logs');
    const c = result.counters ?? {};
    assert.deepEqual(
      [c['files'], c['linesMalformed'], c['duplicates'], c['linksOutside'], c['filesUnreadable']],
      [4, 3, 3, 1, 1],
    );
    const text = JSON.stringify([result, state]);
    for (const secret of [root, '/home/alice', 'alice', 'work/app', 'msg_OUT', 'msg_TXT'])
      assert.ok(!text.includes(secret), secret);
    state = result.state;
    assert.ok(!JSON.stringify(state).includes(root));
  });

  let halfOfA5 = '';
  let restOfA5 = '';
  it(
    'reads only the bytes appended since, adds a later line of a counted message as a difference, and keeps a ' +
      'partial line',
    async () => {
      const sizeBefore = statSync(sessA).size;
      const a5 = line(
        claudeAssistant({
          id: 'msg_A5',
          requestId: 'req_A5',
          uuid: 'u-a7',
          model: SONNET,
          session: 'sess-a',
          cwd: APP,
          at: '2026-11-24T12:20:00.000Z',
          usage: { input: 4, output: 6, cacheWrite: 0, cacheRead: 0 },
        }),
      );
      halfOfA5 = a5.slice(0, 200);
      restOfA5 = a5.slice(200);
      const complete =
        appendRaw(
          sessA,
          line(
            claudeAssistant({ ...a3, uuid: 'u-a5', usage: { input: 5, output: 90, cacheWrite: 300, cacheRead: 500 } }),
          ),
        ) +
        appendRaw(
          sessA,
          line(
            claudeAssistant({
              id: 'msg_A4',
              requestId: 'req_A4',
              uuid: 'u-a6',
              model: SONNET,
              session: 'sess-a',
              cwd: APP,
              at: '2026-11-24T12:10:00.000Z',
              usage: { input: 2, output: 3, cacheWrite: 0, cacheRead: 0 },
            }),
          ),
        );
      const partial = appendRaw(sessA, halfOfA5);
      const result = await collect('2026-11-24T12:40:00.000Z');
      assert.deepEqual(rows(result), [
        row('2026-11-24T11:00:00.000Z', OPUS, 'app', 'sess-a', 0, 0, 20, 0, 0),
        row('2026-11-24T12:00:00.000Z', SONNET, 'app', 'sess-a', 1, 2, 3, 0, 0),
      ]);
      assert.equal(result.counters?.['bytesRead'], complete + partial, 'only the appended bytes');
      assert.equal(result.counters?.['filesRead'], 1);
      const offsets = Object.values((result.state as { files: Record<string, { o: number }> }).files).map((f) => f.o);
      assert.ok(offsets.includes(sizeBefore + complete), 'the cursor stops before the partial line');
      assert.deepEqual(windows(result), { 'tokens-5h': 4503 + 20 + 5, 'tokens-day': 4528, 'tokens-7d': 4538 });
      state = result.state;
    },
  );

  it('counts the partial line once it is finished, reading it again from its start', async () => {
    const rest = appendRaw(sessA, restOfA5);
    const result = await collect('2026-11-24T12:41:00.000Z');
    assert.deepEqual(rows(result), [row('2026-11-24T12:00:00.000Z', SONNET, 'app', 'sess-a', 1, 4, 6, 0, 0)]);
    assert.equal(result.counters?.['bytesRead'], Buffer.byteLength(halfOfA5) + rest);
    state = result.state;
  });

  it('reads nothing when nothing changed', async () => {
    const result = await collect('2026-11-24T12:42:00.000Z');
    assert.deepEqual(result.activity, []);
    assert.equal(result.counters?.['bytesRead'], 0);
    assert.equal(windows(result)['tokens-day'], 4528 + 10);
    state = result.state;
  });

  it('starts a replaced (rotated) file over without counting its old lines again', async () => {
    const next = `${sessB}.new`;
    writeLog(
      next,
      [
        claudeAssistant({ ...a2, session: 'sess-b' }),
        claudeAssistant(b1),
        claudeAssistant({
          id: 'msg_B2',
          requestId: 'req_B2',
          uuid: 'u-b2',
          model: SONNET,
          session: 'sess-b',
          cwd: APP,
          at: '2026-11-24T12:35:00.000Z',
          usage: { input: 1, output: 1, cacheWrite: 0, cacheRead: 0 },
        }),
      ],
      T0 + 5000,
    );
    renameSync(next, sessB);
    const result = await collect('2026-11-24T12:43:00.000Z');
    assert.deepEqual(rows(result), [row('2026-11-24T12:00:00.000Z', SONNET, 'app', 'sess-b', 1, 1, 1, 0, 0)]);
    assert.equal(result.counters?.['filesRestarted'], 1);
    assert.equal(result.counters?.['duplicates'], 2);
    state = result.state;
  });

  it('starts a truncated file over', async () => {
    truncateSync(sessC, 0);
    writeFileSync(
      sessC,
      line(
        claudeAssistant({
          id: 'msg_C2',
          requestId: 'req_C2',
          uuid: 'u-c3',
          model: HAIKU,
          session: 'sess-c',
          cwd: '/home/alice',
          at: '2026-11-24T12:36:00.000Z',
          usage: { input: 2, output: 2, cacheWrite: 0, cacheRead: 0 },
        }),
      ),
    );
    const result = await collect('2026-11-24T12:44:00.000Z');
    assert.deepEqual(rows(result), [row('2026-11-24T12:00:00.000Z', HAIKU, '~', 'sess-c', 1, 2, 2, 0, 0)]);
    assert.equal(result.counters?.['filesRestarted'], 1);
  });

  it('with a small read budget, spreads a first read over several collects and reaches the same totals', async () => {
    const small = createClaudeCodeCollector({ identity: IDENTITY, bytesPerCollect: 1 });
    const saved = state;
    state = null;
    const totals = { requests: 0, input: 0, output: 0 };
    for (let i = 0; i < 10; i++) {
      const result = await collect('2026-11-24T12:45:00.000Z', small);
      for (const b of result.activity ?? []) {
        totals.requests += b.requests;
        totals.input += b.inputTokens;
        totals.output += b.outputTokens;
      }
      state = result.state;
      if (result.counters?.['budgetExhausted'] === 0) break;
    }
    // Everything written so far: sess-a (A1..A5), sess-b (A2 copy, B1, B2), sess-c (C2).
    assert.deepEqual(totals, {
      requests: 8,
      input: 30 + 5 + 2 + 4 + 7 + 1 + 2,
      output: 50 + 30 + 90 + 3 + 6 + 11 + 1 + 2,
    });
    state = saved;
  });

  it(
    'counts cache writes a line carries only split by lifetime (5-minute and 1-hour), and prefers the ' + 'total',
    async () => {
      const splitRoot = join(tempTree(dirs, 'claude-split'), 'projects');
      const only = claudeAssistant({
        id: 'msg_SPLIT',
        uuid: 'u-sp',
        model: SONNET,
        session: 'sess-s',
        cwd: APP,
        at: '2026-11-24T09:10:00.000Z',
        usage: { input: 4, output: 6, cacheWrite: 0, cacheRead: 9 },
      }) as { message: { usage: Record<string, unknown> } };
      delete only.message.usage['cache_creation_input_tokens'];
      only.message.usage['cache_creation'] = { ephemeral_5m_input_tokens: 120, ephemeral_1h_input_tokens: 2000 };
      const both = claudeAssistant({
        id: 'msg_BOTH',
        uuid: 'u-bo',
        model: SONNET,
        session: 'sess-s',
        cwd: APP,
        at: '2026-11-24T09:20:00.000Z',
        usage: { input: 1, output: 2, cacheWrite: 50, cacheRead: 0 },
      });
      writeLog(join(splitRoot, '-home-alice-work-app', 'sess-s.jsonl'), [only, both], T0);
      const result = await collector.collect(
        context('claude-code', { paths: [splitRoot] }, new Date('2026-11-24T12:30:00.000Z'), null),
      );
      assert.deepEqual(rows(result), [row('2026-11-24T09:00:00.000Z', SONNET, 'app', 'sess-s', 2, 5, 8, 9, 2120 + 50)]);
    },
  );

  it('answers nothing, without failing, when no log directory exists', async () => {
    const result = await collector.collect(context('claude-code', { paths: [join(root, 'nope')] }, new Date(T0), null));
    assert.deepEqual([result.readings, result.activity], [[], []]);
  });

  it('refuses paths that are not a short list of absolute paths', async () => {
    for (const paths of ['/tmp', [], ['relative/dir'], [42], Array.from({ length: 17 }, () => '/tmp')]) {
      await assert.rejects(
        collector.collect(context('claude-code', { paths }, new Date(T0), null)),
        (err: unknown) => err instanceof CollectorError && err.code === 'not_configured',
      );
    }
  });

  it('defaults to $CLAUDE_CONFIG_DIR, else ~/.config/claude and ~/.claude', () => {
    assert.deepEqual(defaultRoots({ CLAUDE_CONFIG_DIR: '/a, /b' }, '/h'), ['/a/projects', '/b/projects']);
    assert.deepEqual(defaultRoots({}, '/h'), ['/h/.config/claude/projects', '/h/.claude/projects']);
  });
});
