import type { Logger } from 'pino';
import { wellFormedRecord } from '../../protocol/meter.ts';
import { journalFiles, journalPath, readJournal, type JournalMark } from '../../store/usage-journal.ts';

// What the meter (actor.ts) meters at start from earlier runs' usage journals (docs/api.md, Usage, "What survives
// a crash"): each record past the mark its file's commit reached, then the files go.

export interface ReplayDeps {
  dataDir: string;
  /** This run's ID: its own journal files are not replayed. */
  run: string;
  log: Logger;
  /** The journal marks the store committed, by file. */
  marks(): Promise<[string, number][]>;
  /** Meters one record read back (packed fields), marked where it ends in its file. */
  add(fields: unknown[], mark: JournalMark): void;
  /** Resolves once what was added is committed. */
  flush(): Promise<void>;
  /** Removes the replayed files and their marks. */
  retire(names: string[]): Promise<void>;
}

/** Each record carries its own mark, so a replay cut short resumes where it stopped. */
export async function replayJournals(d: ReplayDeps): Promise<{ records: number; files: number }> {
  const files = journalFiles(d.dataDir).filter((f) => f.run !== d.run);
  if (files.length === 0) return { records: 0, files: 0 };
  const committed = new Map(await d.marks());
  let records = 0;
  let damaged = 0;
  for (const { name } of files) {
    for (const { fields, end } of readJournal(journalPath(d.dataDir, name), committed.get(name) ?? 0)) {
      if (!Array.isArray(fields) || !wellFormedRecord(fields)) {
        damaged++;
        continue;
      }
      d.add(fields, { file: name, end });
      records++;
    }
  }
  await d.flush();
  await d.retire(files.map((f) => f.name));
  if (records > 0 || damaged > 0)
    d.log.warn(
      { records, damaged, files: files.length },
      'usage of calls before an unclean stop metered from its journal',
    );
  return { records, files: files.length };
}
