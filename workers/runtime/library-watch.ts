import { watch as fsWatch, type FSWatcher } from 'node:fs';
import { mkdir, stat } from 'node:fs/promises';
import type { Logger } from 'pino';
import type { RuntimeModelList, RuntimeModelView } from '../../protocol/http/runtime.ts';
import type { RuntimeEvent } from '../../protocol/runtime.ts';
import { readLibrary, verdictKey } from './library.ts';

// The edge's view of the model library, kept current without a restart: the models directory is created at
// start and watched (debounced, since a copy fires many events), and every change re-reads the headers. When
// the platform cannot watch it, the library is re-read on demand instead (a listing, a name the catalog does
// not know). Each unhealthy file version is logged once, by its library name (the model's own ID), never a path.

/** Names that came and went since the last read (at most 20 each, bounded: they are file names). */
export interface LibraryChange {
  added: string[];
  removed: string[];
}

const names = (list: Iterable<string>, not: ReadonlyMap<string, unknown>) =>
  [...list]
    .filter((n) => !not.has(n))
    .slice(0, 20)
    .map((n) => n.slice(0, 200));

export type WatchFn = (dir: string, listener: () => void) => FSWatcher;

export interface ModelLibraryOptions {
  directory(): string;
  log: Logger;
  /** Files came, went or changed health: the embedded providers re-list the library. */
  onChange(list: RuntimeModelList, change: LibraryChange): void;
  /** Injectable so a test can make watching fail. */
  watch?: WatchFn;
  debounceMs?: number;
}

export interface ModelLibrary {
  /** Creates the directory, reads the library, warns about unhealthy files and starts watching. */
  start(): Promise<void>;
  /** A fresh read; with watching down, this is the re-listing that notices changes. */
  read(): Promise<RuntimeModelList>;
  /** The last read's view of one file, by library name. */
  lookup(name: string): RuntimeModelView | undefined;
  /** A name the catalog does not know: re-read when nothing watches the directory. */
  missed(): void;
  /** The worker's news: a refused file version is corrupt from now on. */
  heard(event: RuntimeEvent): void;
  /** The directory setting may have changed (ignored before start); resolves once it watches the one set now. */
  reconfigure(): Promise<void>;
  /** The verdicts the providers' listings apply too. */
  readonly verdicts: ReadonlyMap<string, string>;
  watching(): boolean;
  close(): void;
}

const DEFAULT_DEBOUNCE_MS = 200;
const MAX_VERDICTS = 1000;

const defaultWatch: WatchFn = (dir, listener) => fsWatch(dir, { recursive: true, persistent: false }, listener);

/** Each unhealthy file's problem is logged once per file version. */
function warnUnhealthy(list: RuntimeModelList, warned: Set<string>, log: ModelLibraryOptions['log']): void {
  for (const v of list.data) {
    if (v.health === 'ok') continue;
    const key = `${verdictKey(v.name, v.sizeBytes, v.modifiedAt)}\0${v.problem}`;
    if (warned.has(key)) continue;
    warned.add(key);
    log.warn(
      { model: v.name.slice(0, 200), health: v.health, problem: v.problem },
      'unhealthy model file in the library',
    );
  }
}

/**
 * One run at a time. A caller that comes during a run gets the next one, which starts when it ends: the run in
 * flight may have begun before the change that caller wants to see. Callers that wait share it.
 */
function oneAtATime<T>(run: () => Promise<T>): () => Promise<T> {
  let running: Promise<T> | null = null;
  let queued: Promise<T> | null = null;
  const next = (): Promise<T> => {
    if (running) {
      queued ??= running
        .catch(() => undefined)
        .then(() => {
          queued = null;
          return next();
        });
      return queued;
    }
    running = run().finally(() => {
      running = null;
    });
    return running;
  };
  return next;
}

const logFailure = (log: ModelLibraryOptions['log'], msg: string) => (err: unknown) =>
  log.warn({ err: String(err).slice(0, 200) }, msg);

// A factory: one closure holds the library's state: its files by name, the read in flight and the watcher.
export function createModelLibrary(options: ModelLibraryOptions): ModelLibrary {
  const watchFn = options.watch ?? defaultWatch;
  const debounceMs = options.debounceMs ?? DEFAULT_DEBOUNCE_MS;
  const verdicts = new Map<string, string>();
  const warned = new Set<string>();
  let byName = new Map<string, RuntimeModelView>();
  let signature = '';
  let watcher: FSWatcher | null = null;
  let watchedDir: string | null = null;
  let timer: NodeJS.Timeout | null = null;
  let closed = false;
  let started = false;

  function take(list: RuntimeModelList): void {
    const previous = byName;
    byName = new Map(list.data.map((v) => [v.name, v]));
    warnUnhealthy(list, warned, options.log);
    const next = JSON.stringify(list.data.map((v) => [v.name, v.health, v.sizeBytes, v.modifiedAt]));
    if (!closed && signature !== '' && next !== signature)
      options.onChange(list, { added: names(byName.keys(), previous), removed: names(previous.keys(), byName) });
    signature = next;
  }

  const read = oneAtATime(() =>
    readLibrary(options.directory(), verdicts).then((list) => {
      take(list);
      return list;
    }),
  );

  function schedule(): void {
    if (closed) return;
    if (timer) clearTimeout(timer);
    timer = setTimeout(() => {
      timer = null;
      read().catch(logFailure(options.log, 'could not re-read the model library'));
    }, debounceMs);
    timer.unref();
  }

  function unwatch(): void {
    watcher?.close();
    watcher = null;
    watchedDir = null;
  }

  /** Only start creates the directory: a PATCHed path is the user's to create, not ours to litter. */
  async function watchDir(create: boolean): Promise<void> {
    const dir = options.directory();
    if (watcher && watchedDir === dir) return;
    unwatch();
    try {
      if (create) await mkdir(dir, { recursive: true });
      // Node 22+'s recursive watch on Linux does not throw for a missing directory: it watches nothing.
      if (!(await stat(dir)).isDirectory()) throw Object.assign(new Error('not a directory'), { code: 'ENOTDIR' });
      const w = watchFn(dir, schedule);
      w.on('error', (err) => {
        if (watcher !== w) return;
        options.log.warn(
          { err: String(err).slice(0, 200) },
          'stopped watching the models directory; the library is re-read on demand',
        );
        unwatch();
      });
      watcher = w;
      watchedDir = dir;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? 'unknown';
      options.log.warn(
        { code: String(code).slice(0, 40) },
        'cannot watch the models directory; the library is re-read on demand',
      );
    }
  }

  return {
    verdicts,
    async start() {
      started = true;
      await watchDir(true);
      await read().catch(logFailure(options.log, 'could not read the model library'));
    },
    read,
    lookup: (name) => byName.get(name),
    missed() {
      if (!watcher) schedule();
    },
    heard(event) {
      if (event.t !== 'refused') return;
      if (verdicts.size >= MAX_VERDICTS) verdicts.delete(verdicts.keys().next().value!);
      verdicts.set(verdictKey(event.name, event.sizeBytes, event.modifiedAt), event.problem);
      schedule();
    },
    reconfigure() {
      // The settings service reports its first state before start(); start() reads it then.
      if (!started || closed) return Promise.resolve();
      return watchDir(false).then(schedule);
    },
    watching: () => watcher !== null,
    close() {
      closed = true;
      if (timer) clearTimeout(timer);
      unwatch();
    },
  };
}
