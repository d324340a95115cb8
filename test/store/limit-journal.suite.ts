import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, truncateSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { followLimitJournal, GENERATION_MAX, openLimitJournal, replayable } from '../../store/limit-journal.ts';
import { createLimitGate, createLimitGateBuffer } from '../../state/limit-gate.ts';
import { createLedger, createLedgerBuffer } from '../../state/limit-ledger.ts';
import { Worker } from 'node:worker_threads';

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
/** Slot n is `LIM|key-n`, slot 9 `LIM|*`. */
const nameOf = (slot: number) => (slot === 9 ? `${LIM}|*` : slot < 5 ? `${LIM}|key-${slot}` : undefined);
const noError = (err: unknown) => assert.fail(String(err));
const open = (dir: string, covered = 0) => openLimitJournal(dir, covered, nameOf, noError);
const turn = () => new Promise((r) => setImmediate(r));
const used = (dir: string, covered = 0) => replayable(dir, covered).map((s) => s.used);

test('flush writes the batch at once: a settlement is on disk before the answer it settles goes out', async () => {
  const dir = tempDir();
  const journal = open(dir);
  journal.append(1, 60_000, 5n);
  journal.flush();
  assert.deepEqual(used(dir), [5n], 'on disk in the same synchronous stretch');
  journal.append(1, 60_000, 6n);
  await Promise.resolve();
  assert.deepEqual(used(dir), [5n, 6n], 'and the next batch still by the end of its turn');
  journal.close();
});

test("a turn's settlements are on disk when the turn ends, one write for the batch", async () => {
  const dir = tempDir();
  const journal = open(dir);
  journal.append(1, 60_000, 5n);
  journal.append(9, 60_000, 123_456_789_012_345_678n);
  journal.append(1, 60_000, 7n);
  assert.equal(readFileSync(join(dir, '1.journal')).length, 0, 'not written mid-turn');
  await Promise.resolve();
  assert.deepEqual(replayable(dir, 0), [
    { limitId: LIM, scopeKey: 'key-1', windowStart: 60_000, used: 5n },
    { limitId: LIM, scopeKey: '*', windowStart: 60_000, used: 123_456_789_012_345_678n },
    { limitId: LIM, scopeKey: 'key-1', windowStart: 60_000, used: 7n },
  ]);
  journal.close();
});

test('a slot the ledger never named is not journaled; a batch larger than the buffer is written whole', async () => {
  const dir = tempDir();
  const journal = open(dir);
  journal.append(7, 1, 1n);
  for (let i = 0; i < 5000; i++) journal.append(i % 5, 1, BigInt(i));
  await Promise.resolve();
  const read = replayable(dir, 0);
  assert.equal(read.length, 5000);
  assert.deepEqual([read[4999]!.scopeKey, read[4999]!.used], ['key-4', 4999n]);
  journal.close();
});

test('a snapshot covers the generations up to the one rotate closed; drop deletes them', async () => {
  const dir = tempDir();
  const journal = open(dir);
  journal.append(9, 1_000, 1n);
  const closed = journal.rotate();
  assert.equal(closed, 1);
  // The new file names the slot again before its first settlement.
  journal.append(9, 1_000, 2n);
  await turn();
  assert.deepEqual(used(dir, closed), [2n], 'only what came after the snapshot');
  assert.deepEqual(used(dir), [1n, 2n]);
  journal.drop(closed);
  assert.deepEqual(readdirSync(dir), ['2.journal']);
  journal.close();
});

test('a new journal opens after every generation on disk and after the covered one', () => {
  const dir = tempDir();
  open(dir).close();
  open(dir).close();
  assert.deepEqual(readdirSync(dir).sort(), ['1.journal', '2.journal']);
  open(dir, 7).close();
  assert.ok(readdirSync(dir).includes('8.journal'));
});

test('a record a kill cut short ends the replay; foreign files and odd names are skipped', async () => {
  const dir = tempDir();
  const journal = open(dir);
  journal.append(1, 10, 4n);
  journal.append(2, 10, 6n);
  journal.close();
  const file = join(dir, '1.journal');
  const whole = readFileSync(file).length;
  truncateSync(file, whole - 3);
  assert.deepEqual(used(dir), [4n], 'the second settlement was cut');
  // A name that is not a limit's: its settlements are dropped, not guessed at. The same bytes with a limit's name
  // are read: the layout built here is the journal's.
  writeFileSync(join(dir, '5.journal'), recordOf('../../etc|x', 99n));
  writeFileSync(join(dir, 'notes.txt'), 'not a journal');
  assert.deepEqual(used(dir), [4n]);
  writeFileSync(join(dir, '5.journal'), recordOf(`${LIM}|x`, 99n));
  assert.deepEqual(used(dir), [4n, 99n]);
});

/** A KEY record of `name` for slot 0 and one SETTLEMENT of `use` in window 10, as the journal lays them out. */
function recordOf(name: string, use: bigint): Buffer {
  const padded = (name.length + 7) & ~7;
  const bytes = new ArrayBuffer(16 + padded + 24);
  new Uint32Array(bytes, 0, 4).set([1, 0, name.length, 0]);
  Buffer.from(bytes).write(name, 16, 'latin1');
  new Uint32Array(bytes, 16 + padded, 2).set([2, 0]);
  new Float64Array(bytes, 16 + padded + 8, 1)[0] = 10;
  new BigInt64Array(bytes, 16 + padded + 16, 1)[0] = use;
  return Buffer.from(bytes);
}

test('a failed write (a full disk) is reported once and the journal goes on', async () => {
  const dir = tempDir();
  const errors: unknown[] = [];
  const journal = openLimitJournal(dir, 0, nameOf, (err) => errors.push(err));
  // The next generation's file is a device whose every write fails for want of space.
  symlinkSync('/dev/full', join(dir, '2.journal'));
  assert.equal(journal.rotate(), 1);
  for (let i = 0; i < 3; i++) {
    journal.append(9, 1, 1n);
    await Promise.resolve();
  }
  assert.equal(errors.length, 1);
  assert.match(String(errors[0]), /ENOSPC/);
  assert.equal(journal.rotate(), 2, 'rotates past the failed file');
  journal.append(9, 1, 2n);
  journal.close();
  assert.deepEqual(used(dir, 2), [2n]);
});

test('the last generation is written, replayed and dropped; none is written past it (W4.6)', async () => {
  const dir = tempDir();
  const errors: unknown[] = [];
  const journal = openLimitJournal(dir, GENERATION_MAX - 1, nameOf, (err) => errors.push(err));
  journal.append(9, 1, 1n);
  await Promise.resolve();
  assert.deepEqual(readdirSync(dir), [`${GENERATION_MAX}.journal`]);
  assert.deepEqual(used(dir, GENERATION_MAX - 1), [1n]);
  // The next generation would have 16 digits: no file of it, and what it would hold is left to the snapshots.
  assert.equal(journal.rotate(), GENERATION_MAX);
  journal.append(9, 1, 2n);
  await Promise.resolve();
  assert.equal(errors.length, 1);
  assert.match(String(errors[0]), /past its last generation/);
  assert.equal(journal.rotate(), GENERATION_MAX, 'a snapshot then covers every file there is');
  journal.drop(GENERATION_MAX);
  journal.close();
  assert.deepEqual(readdirSync(dir), []);
  // Opened again from the covered last generation: still no file it could not read back, and told once more.
  openLimitJournal(dir, GENERATION_MAX, nameOf, (err) => errors.push(err)).close();
  assert.deepEqual(readdirSync(dir), []);
  assert.equal(errors.length, 2);
});

test('a file name the writer would not make (a leading zero) is neither replayed nor dropped (W4.6)', () => {
  const dir = tempDir();
  writeFileSync(join(dir, '007.journal'), recordOf(`${LIM}|x`, 99n));
  assert.deepEqual(used(dir), []);
  const journal = open(dir);
  journal.close();
  assert.deepEqual(readdirSync(dir).sort(), ['007.journal', '1.journal'], "numbered after the journal's own files");
  journal.drop(GENERATION_MAX);
  assert.deepEqual(readdirSync(dir), ['007.journal']);
});

test('with a gate, edge threads write into the generation the control thread holds, and a turn moves them on', () => {
  const dir = tempDir();
  const gate = createLimitGate(createLimitGateBuffer());
  const control = openLimitJournal(dir, 0, nameOf, noError, gate);
  assert.equal(gate.generation(), 1, 'the journal opened generation 1 and the gate holds it');
  const edge = followLimitJournal(dir, gate, nameOf, noError);
  control.append(1, 60_000, 1n);
  edge.append(2, 60_000, 2n);
  control.flush();
  edge.flush();
  assert.deepEqual(used(dir).sort(), [1n, 2n], 'both in generation 1');
  let read = 0;
  assert.equal(
    control.rotate(() => ++read > 0),
    1,
  );
  assert.equal(read, 1);
  assert.equal(gate.generation(), 2);
  edge.append(2, 60_000, 20n);
  edge.flush();
  assert.deepEqual(used(dir, 1), [20n], "the edge thread's next settlement is past the snapshot");
  // A snapshot that cannot be taken yet moves nothing.
  assert.equal(
    control.rotate(() => false),
    null,
  );
  assert.equal(gate.generation(), 2);
  edge.append(3, 60_000, 30n);
  edge.flush();
  assert.deepEqual(used(dir, 1), [20n, 30n]);
  control.drop(1);
  assert.deepEqual(readdirSync(dir).sort(), ['2.journal']);
  control.close();
  edge.close();
});

test('the gate: a settlement under way holds no lock after it exits, and claims are counted', () => {
  const gate = createLimitGate(createLimitGateBuffer());
  gate.begin(7);
  gate.enter();
  gate.exit();
  gate.claimed();
  gate.claimed();
  assert.equal(gate.claims(), 2);
  assert.equal(
    gate.turn(() => true, 8),
    true,
  );
  assert.equal(gate.generation(), 8);
  // After a turn the lock is open: an edge thread's enter does not wait.
  gate.enter();
  gate.exit();
});

test('threads settling during snapshots: a snapshot plus the later journal counts each settlement once', async () => {
  const dir = tempDir();
  const ledgerBuffer = createLedgerBuffer(16);
  const gateBuffer = createLimitGateBuffer();
  const gate = createLimitGate(gateBuffer);
  const ledger = createLedger(ledgerBuffer);
  const slot = ledger.slotOf(LIM, '*');
  ledger.load(slot, 60_000, 0n);
  const names = (s: number) => (s === slot ? `${LIM}|*` : undefined);
  const control = openLimitJournal(dir, 0, names, noError, gate);
  const SETTLEMENTS = 5_000;
  // Each thread settles as an edge thread does: enter, settle in the ledger, journal, exit (edge/gateway/admission.ts).
  const source = `
    const { parentPort, workerData } = require('node:worker_threads');
    import('tsx/esm/api').then(async ({ register }) => {
      register();
      const { createLedger } = await import(workerData.ledger);
      const { createLimitGate } = await import(workerData.gate);
      const { followLimitJournal } = await import(workerData.journal);
      const ledger = createLedger(workerData.ledgerBuffer);
      const gate = createLimitGate(workerData.gateBuffer);
      const slot = ledger.slotOf(workerData.lim, '*');
      const journal = followLimitJournal(workerData.dir, gate, ledger.nameOf, (err) => { throw err; });
      for (let i = 0; i < workerData.settlements; i++) {
        gate.enter();
        ledger.settle(slot, 60000, 0n, 1n);
        journal.append(slot, 60000, 1n);
        gate.exit();
        if (i % 16 === 0) journal.flush();
      }
      journal.close();
      parentPort.postMessage('done');
    });`;
  const url = (path: string) => new URL(path, import.meta.url).href;
  const workerData = {
    ledger: url('../../state/limit-ledger.ts'),
    gate: url('../../state/limit-gate.ts'),
    journal: url('../../store/limit-journal.ts'),
    ledgerBuffer,
    gateBuffer,
    lim: LIM,
    dir,
    settlements: SETTLEMENTS,
  };
  const threads = Array.from(
    { length: 2 },
    () =>
      new Promise<void>((resolve, reject) => {
        const w = new Worker(source, { eval: true, workerData });
        w.once('message', () => resolve());
        w.once('error', reject);
      }),
  );
  let running = true;
  const snapshots: { covered: number; used: bigint }[] = [];
  void Promise.all(threads).then(() => (running = false));
  while (running) {
    let used = 0n;
    const covered = control.rotate(() => {
      used = ledger.read(slot).used;
      return true;
    });
    snapshots.push({ covered: covered!, used });
    await new Promise((r) => setImmediate(r));
  }
  await Promise.all(threads);
  control.close();
  const total = BigInt(2 * SETTLEMENTS);
  assert.equal(ledger.read(slot).used, total);
  assert.ok(snapshots.length >= 2, `snapshots taken while they settled: ${snapshots.length}`);
  for (const { covered, used } of snapshots) {
    const later = replayable(dir, covered).reduce((sum, s) => sum + s.used, 0n);
    assert.equal(used + later, total, `the snapshot covering generation ${covered}`);
  }
});
