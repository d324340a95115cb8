import assert from 'node:assert/strict';
import { appendFileSync, readdirSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { packRecord, RECORD_SLOTS, wellFormedRecord } from '../../protocol/meter.ts';
import {
  JOURNAL_DIR,
  journalFiles,
  journalPath,
  openUsageJournal,
  readJournal,
  removeJournal,
} from '../../store/usage-journal.ts';
import { removeDirs, tempDataDir, usageEvent } from '../helpers/usage.ts';

const dirs: string[] = [];
after(() => removeDirs(dirs));
const noFailure = (err: Error) => assert.fail(err.message);

const packed = (over: Parameters<typeof usageEvent>[0] = {}) => {
  const fields: unknown[] = [];
  packRecord(fields, usageEvent(over));
  return fields;
};

test('each append is on disk at once, and reads back as the record packed', () => {
  const dataDir = tempDataDir(dirs);
  const journal = openUsageJournal({ dataDir, run: 'r1', writer: 'control', onFailure: noFailure });
  const first = packed({ tokenId: 'tok_first' });
  const mark = journal.append(first, 0, RECORD_SLOTS)!;
  assert.equal(mark.file, 'r1-control-000001.jnl');
  assert.equal(statSync(journalPath(dataDir, mark.file)).size, mark.end, 'written in the same stretch');
  // A record in the middle of a batch's fields is appended alone.
  const batch = [...packed({ tokenId: 'tok_a' }), ...packed({ tokenId: 'tok_b' })];
  const second = journal.append(batch, RECORD_SLOTS, RECORD_SLOTS)!;
  const read = readJournal(journalPath(dataDir, mark.file), 0);
  assert.deepEqual(
    read.map((r) => r.end),
    [mark.end, second.end],
  );
  assert.deepEqual(read[0]!.fields, first);
  assert.equal((read[1]!.fields as unknown[])[1], 'tok_b');
  assert.ok(read.every((r) => wellFormedRecord(r.fields as unknown[])));
  // From a mark on: only what follows it.
  assert.deepEqual(
    readJournal(journalPath(dataDir, mark.file), mark.end).map((r) => r.end),
    [second.end],
  );
  journal.close();
});

test('a torn last frame ends the replay; what came before it is kept', () => {
  const dataDir = tempDataDir(dirs);
  const journal = openUsageJournal({ dataDir, run: 'r1', writer: 'edge1', onFailure: noFailure });
  const a = journal.append(packed(), 0, RECORD_SLOTS)!;
  const b = journal.append(packed(), 0, RECORD_SLOTS)!;
  journal.close();
  const path = journalPath(dataDir, a.file);
  truncateSync(path, b.end - 3);
  assert.deepEqual(
    readJournal(path, 0).map((r) => r.end),
    [a.end],
  );
  // A length no record has (garbage after the last frame) is not read as one.
  appendFileSync(path, Buffer.from([0xff, 0xff, 0xff, 0x7f, 1, 2, 3]));
  assert.deepEqual(
    readJournal(path, 0).map((r) => r.end),
    [a.end],
  );
  assert.deepEqual(readJournal(join(dataDir, 'nowhere.jnl'), 0), [], 'a file gone reads as empty');
});

test('a writer moves to its next file past the size bound, and the files list in order', () => {
  const dataDir = tempDataDir(dirs);
  const journal = openUsageJournal({ dataDir, run: 'r2', writer: 'control', onFailure: noFailure, rotateBytes: 1 });
  const files = [0, 1, 2].map(() => journal.append(packed(), 0, RECORD_SLOTS)!.file);
  journal.close();
  assert.deepEqual(files, ['r2-control-000001.jnl', 'r2-control-000002.jnl', 'r2-control-000003.jnl']);
  appendFileSync(join(dataDir, JOURNAL_DIR, 'notes.txt'), 'not the journal');
  assert.deepEqual(
    journalFiles(dataDir).map((f) => [f.run, f.writer, f.seq]),
    [
      ['r2', 'control', 1],
      ['r2', 'control', 2],
      ['r2', 'control', 3],
    ],
  );
  removeJournal(dataDir, files[0]!);
  removeJournal(dataDir, files[0]!);
  assert.equal(journalFiles(dataDir).length, 2, 'removed, twice without complaint');
  assert.ok(readdirSync(join(dataDir, JOURNAL_DIR)).includes('notes.txt'), 'a file not the journal stays');
});

test('a write that fails turns the journal off once; metering goes on without it', () => {
  const dataDir = tempDataDir(dirs);
  const failures: string[] = [];
  // A file where the journal's directory should be: no file can be opened in it.
  writeFileSync(join(dataDir, JOURNAL_DIR), 'in the way');
  const journal = openUsageJournal({
    dataDir,
    run: 'r3',
    writer: 'control',
    onFailure: (e) => failures.push(e.message),
  });
  assert.equal(journal.append(packed(), 0, RECORD_SLOTS), null);
  assert.equal(journal.append(packed(), 0, RECORD_SLOTS), null);
  assert.equal(failures.length, 1);
  journal.close();
});

test('a run or writer name that would not make a plain file name is refused', () => {
  const dataDir = tempDataDir(dirs);
  for (const [run, writer] of [
    ['../x', 'control'],
    ['r', 'Edge/1'],
    ['', 'control'],
    ['r'.repeat(41), 'control'],
  ])
    assert.throws(() => openUsageJournal({ dataDir, run: run!, writer: writer!, onFailure: noFailure }));
});

test('records of another shape are told apart from the packed ones', () => {
  const good = packed();
  assert.equal(wellFormedRecord(good), true);
  for (const [slot, value] of [
    [0, 'yesterday'],
    [1, ''],
    [4, 'chat.nothing'],
    [5, 'maybe'],
    [7, -1],
    [13, { tool: 1.5 }],
    [21, 7],
  ] as const) {
    const bad = [...good];
    bad[slot] = value;
    assert.equal(wellFormedRecord(bad), false, `slot ${slot}`);
  }
  assert.equal(wellFormedRecord(good.slice(1)), false, 'a record of another length');
});
