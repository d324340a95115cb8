import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { createClaudeCodeCollector } from '../../../../workers/gauge/collectors/claude-code/index.ts';
import { placeOf } from '../../../../workers/gauge/collectors/local-logs/labels.ts';
import {
  IDENTITY,
  claudeAssistant,
  context,
  line,
  removeTrees,
  tempTree,
  writeLog,
} from '../../../helpers/agent-logs.ts';

// The bounds of the local-logs state and reader, through the Claude Code collector: remembered IDs, recent
// messages and over-long lines.

const collector = createClaudeCodeCollector({ identity: IDENTITY });
const msg = (i: number) =>
  claudeAssistant({
    id: `msg_${i}`,
    requestId: `req_${i}`,
    uuid: `u-${i}`,
    model: 'claude-sonnet-4-5',
    session: 'sess-big',
    cwd: '/home/alice/big',
    at: '2026-11-24T10:00:00.000Z',
    usage: { input: 1, output: 1, cacheWrite: 0, cacheRead: 0 },
  });

describe('local-logs bounds', () => {
  const dirs: string[] = [];
  after(() => removeTrees(dirs));

  it('keeps at most 8192 message IDs and 256 recent messages in state, whatever the history holds', async () => {
    const root = tempTree(dirs, 'bounds');
    writeLog(
      join(root, 'big.jsonl'),
      Array.from({ length: 9000 }, (_, i) => msg(i)),
      Date.now(),
    );
    const result = await collector.collect(
      context('claude-code', { paths: [root] }, new Date('2026-11-24T12:00:00Z'), null),
    );
    assert.equal(result.activity?.[0]?.requests, 9000);
    const state = result.state as { seen: unknown[]; tail: unknown[]; files: object };
    assert.equal(state.seen.length, 8192);
    assert.equal(state.tail.length, 256);
    assert.ok(JSON.stringify(state).length < 300_000, 'state stays small');
  });

  it('skips and counts a line longer than 8 MiB without buffering it, and reads on after it', async () => {
    const root = tempTree(dirs, 'long');
    const path = join(root, 'long.jsonl');
    writeFileSync(path, `{"pad":"${'x'.repeat(9 << 20)}"}\n${line(msg(1))}`);
    const result = await collector.collect(
      context('claude-code', { paths: [root] }, new Date('2026-11-24T12:00:00Z'), null),
    );
    assert.equal(result.counters?.['linesTooLong'], 1);
    assert.equal(result.activity?.[0]?.requests, 1);
  });

  it('labels a project by its folder name, never a path or the user name', () => {
    const project = (cwd: string) => placeOf(cwd, IDENTITY).project;
    assert.deepEqual(
      [
        '/home/alice',
        '/home/alice/',
        '/home/alice/work/app',
        '/srv/alice',
        '/x/Alice-notes-alice',
        'C:\\Users\\bob\\proj',
        '/',
      ].map(project),
      ['~', '~', 'app', '~', '~-notes-~', 'proj', '~'],
    );
    assert.match(placeOf('/home/alice/work/app', IDENTITY).workspace ?? '', /^w-[A-Za-z0-9_-]{10}$/);
    assert.notEqual(placeOf('/a/app', IDENTITY).workspace, placeOf('/b/app', IDENTITY).workspace);
  });

  it('ignores the state of another version and starts over', async () => {
    const root = tempTree(dirs, 'version');
    writeLog(join(root, 'a.jsonl'), [msg(1), msg(2)], Date.now());
    const result = await collector.collect(
      context('claude-code', { paths: [root] }, new Date('2026-11-24T12:00:00Z'), { v: 0, files: 'nonsense' }),
    );
    assert.equal(result.activity?.[0]?.requests, 2);
  });
});
