import assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { openLimitJournal, replayable } from '../../store/limit-journal.ts';

const dirs: string[] = [];
after(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});
const tempDir = () => {
  const dir = mkdtempSync(join(tmpdir(), 'sy-journal-'));
  dirs.push(dir);
  return dir;
};
const LIM = 'lim_01JABCDEFGHJKMNPQRSTVWXYZ0';
const noError = (err: unknown) => assert.fail(String(err));
const turn = () => new Promise((r) => setImmediate(r));

test("a turn's settlements are on disk when the turn ends, one write for the batch", async () => {
  const dir = tempDir();
  const journal = openLimitJournal(dir, 0, noError);
  journal.append(LIM, 'tok_a', 1_000, 5n);
  journal.append(LIM, 'sess:x@y', 1_000, 123_456_789_012_345_678n);
  assert.equal(readFileSync(join(dir, '1.journal'), 'latin1'), '', 'not written mid-turn');
  await Promise.resolve();
  assert.deepEqual(replayable(dir, 0), [
    { limitId: LIM, scopeKey: 'tok_a', windowStart: 1_000, used: 5n },
    { limitId: LIM, scopeKey: 'sess:x@y', windowStart: 1_000, used: 123_456_789_012_345_678n },
  ]);
  journal.close();
});

test('a snapshot covers the generations up to the one rotate closed; drop deletes them', async () => {
  const dir = tempDir();
  const journal = openLimitJournal(dir, 0, noError);
  journal.append(LIM, '*', 1_000, 1n);
  const closed = journal.rotate();
  assert.equal(closed, 1);
  journal.append(LIM, '*', 1_000, 2n);
  await turn();
  assert.deepEqual(
    replayable(dir, closed).map((s) => s.used),
    [2n],
    'only what came after the snapshot',
  );
  assert.deepEqual(
    replayable(dir, 0).map((s) => s.used),
    [1n, 2n],
  );
  journal.drop(closed);
  assert.deepEqual(readdirSync(dir), ['2.journal']);
  journal.close();
});

test('a new journal opens after every generation on disk and after the covered one', () => {
  const dir = tempDir();
  openLimitJournal(dir, 0, noError).close();
  openLimitJournal(dir, 0, noError).close();
  assert.deepEqual(readdirSync(dir).sort(), ['1.journal', '2.journal']);
  openLimitJournal(dir, 7, noError).close();
  assert.ok(readdirSync(dir).includes('8.journal'));
});

test('a torn last line, odd lines and foreign files are skipped', () => {
  const dir = tempDir();
  appendFileSync(
    join(dir, '3.journal'),
    `10 4 ${LIM}|tok_a\n` +
      'garbage line\n' +
      `10 -4 ${LIM}|tok_a\n` +
      `10 4 lim_../../etc|tok_a\n` +
      `10 4 ${LIM}|has space\n` +
      `20 9 ${LIM}|tok_`,
  );
  appendFileSync(join(dir, 'notes.txt'), `10 4 ${LIM}|tok_a\n`);
  assert.deepEqual(replayable(dir, 0), [{ limitId: LIM, scopeKey: 'tok_a', windowStart: 10, used: 4n }]);
});

test('a failed write (a full disk) is reported once and the journal goes on', async () => {
  const dir = tempDir();
  const errors: unknown[] = [];
  const journal = openLimitJournal(dir, 0, (err) => errors.push(err));
  // The next generation's file is a device whose every write fails for want of space.
  symlinkSync('/dev/full', join(dir, '2.journal'));
  assert.equal(journal.rotate(), 1);
  for (let i = 0; i < 3; i++) {
    journal.append(LIM, '*', 1, 1n);
    await Promise.resolve();
  }
  assert.equal(errors.length, 1);
  assert.match(String(errors[0]), /ENOSPC/);
  assert.equal(journal.rotate(), 2, 'rotates past the failed file');
  journal.append(LIM, '*', 1, 2n);
  journal.close();
  assert.deepEqual(
    replayable(dir, 2).map((s) => s.used),
    [2n],
  );
});
