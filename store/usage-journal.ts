import { closeSync, mkdirSync, openSync, readdirSync, readFileSync, unlinkSync, writevSync } from 'node:fs';
import { join } from 'node:path';
import { crc32 } from 'node:zlib';
import { Packr } from 'msgpackr';

// The usage journal (docs/api.md, Usage, "What survives a crash"): each metered call's record is appended here,
// with one write, before the call's last bytes reach its client, so a service killed with SIGKILL loses no
// usage its clients saw settled. The meter's LMDB commits lag its records by up to a quarter of a second; each
// commit also stores, per journal file, where its last record ends (`JournalMark`). At the next start the
// meter folds whatever lies past those marks, then the file goes.
//
// One writer per thread that settles calls (the control thread, each edge thread), each with its own files:
// `<run>-<writer>-<seq>.jnl`, the run an ID drawn at each service start. A writer's records reach the meter in
// the order it wrote them, so a file's mark is the end of its last committed record and everything before it
// is committed too; once a mark names a file, the writer's earlier files are wholly committed and removed.
// Frames are a 4-byte length, a 4-byte CRC-32 and the msgpack of the record's fields (protocol/meter.ts); a
// torn or damaged frame (a disk full, a power cut) ends the file's replay. No fsync: a killed process's writes
// are in the kernel already.

export const JOURNAL_DIR = 'usage-journal';
/** A writer starts its next file past this size, so committed records are removed as the run goes. */
const ROTATE_BYTES = 8 * 1024 * 1024;
/** Frames longer than this are not records (a record is a few hundred bytes): replay stops there. */
const MAX_FRAME_BYTES = 1024 * 1024;
/** A frame's length and CRC-32, before its body. */
const FRAME_HEAD = 8;
const NAME = /^([0-9A-Za-z]{1,40})-([a-z0-9]{1,16})-(\d{6})\.jnl$/;

/** Where a record ends in its journal file. */
export interface JournalMark {
  file: string;
  end: number;
}

export interface UsageJournal {
  /** Appends one record's fields; null once the journal is off (a write failed: metering goes on without it). */
  append(fields: readonly unknown[], from: number, count: number): JournalMark | null;
  close(): void;
}

const packr = new Packr({ useRecords: false, moreTypes: false });

export interface JournalOptions {
  dataDir: string;
  /** This service start's ID: replay skips the files of the run it belongs to. */
  run: string;
  /** Which thread writes (`control`, `edge1`, ...): each its own files. */
  writer: string;
  /** Told once when the journal turns off. */
  onFailure(err: Error): void;
  /** The size past which the writer starts its next file. */
  rotateBytes?: number;
}

export function openUsageJournal(options: JournalOptions): UsageJournal {
  const { dataDir, run, writer, onFailure } = options;
  const rotateBytes = options.rotateBytes ?? ROTATE_BYTES;
  if (!/^[0-9A-Za-z]{1,40}$/.test(run) || !/^[a-z0-9]{1,16}$/.test(writer))
    throw new Error('A usage journal run is 1-40 letters and digits; its writer 1-16 lower-case ones.');
  const dir = join(dataDir, JOURNAL_DIR);
  let fd = -1;
  let seq = 0;
  let file = '';
  let size = 0;
  let failed = false;
  const header = Buffer.alloc(FRAME_HEAD);

  function next(): void {
    if (fd >= 0) closeSync(fd);
    seq += 1;
    file = journalFileName(run, writer, seq);
    fd = openSync(join(dir, file), 'a', 0o600);
    size = 0;
  }

  return {
    append(fields, from, count) {
      if (failed) return null;
      try {
        if (fd < 0) {
          mkdirSync(dir, { recursive: true, mode: 0o700 });
          next();
        } else if (size >= rotateBytes) next();
        const body = packr.pack(fields.slice(from, from + count));
        header.writeUInt32LE(body.length, 0);
        header.writeUInt32LE(crc32(body), 4);
        writevSync(fd, [header, body]);
        size += FRAME_HEAD + body.length;
        return { file, end: size };
      } catch (err) {
        failed = true;
        onFailure(err instanceof Error ? err : new Error(String(err)));
        return null;
      }
    },
    close() {
      if (fd >= 0) closeSync(fd);
      fd = -1;
    },
  };
}

/** A journal file's records from byte `from` on, each with where it ends; stops at a torn or implausible frame. */
export function readJournal(path: string, from: number): { fields: unknown; end: number }[] {
  let bytes: Buffer;
  try {
    bytes = readFileSync(path);
  } catch {
    return [];
  }
  const records: { fields: unknown; end: number }[] = [];
  let at = from;
  while (at + FRAME_HEAD <= bytes.length) {
    const length = bytes.readUInt32LE(at);
    if (length > MAX_FRAME_BYTES || at + FRAME_HEAD + length > bytes.length) break;
    const body = bytes.subarray(at + FRAME_HEAD, at + FRAME_HEAD + length);
    if (crc32(body) !== bytes.readUInt32LE(at + 4)) break;
    let fields: unknown;
    try {
      fields = packr.unpack(body);
    } catch {
      break;
    }
    at += FRAME_HEAD + length;
    records.push({ fields, end: at });
  }
  return records;
}

export interface JournalFile {
  name: string;
  run: string;
  writer: string;
  seq: number;
}

/** The journal files in the data directory (names of another shape are not the journal's and stay). */
export function journalFiles(dataDir: string): JournalFile[] {
  let names: string[];
  try {
    names = readdirSync(join(dataDir, JOURNAL_DIR));
  } catch {
    return [];
  }
  const files: JournalFile[] = [];
  for (const name of names) {
    const parts = journalName(name);
    if (parts !== null) files.push(parts);
  }
  return files.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

export const journalPath = (dataDir: string, name: string) => join(dataDir, JOURNAL_DIR, name);

/** Removes a journal file; one already gone is fine. */
export function removeJournal(dataDir: string, name: string): void {
  try {
    unlinkSync(journalPath(dataDir, name));
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
}

/** A journal file name's parts; null for a name that is not the journal's. */
export function journalName(name: string): JournalFile | null {
  const m = NAME.exec(name);
  return m === null ? null : { name, run: m[1]!, writer: m[2]!, seq: Number(m[3]) };
}

/** The name of a writer's file `seq` (the ones before a marked file are wholly committed). */
export const journalFileName = (run: string, writer: string, seq: number) =>
  `${run}-${writer}-${String(seq).padStart(6, '0')}.jnl`;
