// Every worker's .js entry loads its module through this; worker threads do not inherit the main thread's
// loader. In a build (bin/build.js) the compiled module sits beside the entry and is imported as it is; in
// the source tree there is none, and the TypeScript is loaded through tsx, registered for this thread.
import { existsSync, writeFileSync } from 'node:fs';
import { isMainThread } from 'node:worker_threads';

/** Imports `<name>.js` beside `entryUrl` when it exists, else `<name>.ts` through tsx. */
export async function loadBeside(entryUrl, name) {
  nameThread(entryUrl, name);
  const compiled = new URL(`./${name}.js`, entryUrl);
  if (existsSync(compiled)) return import(compiled.href);
  const { register } = await import('tsx/esm/api');
  register();
  return import(new URL(`./${name}.ts`, entryUrl).href);
}

/**
 * The thread takes the name of its actor (`sy-relay`, `sy-meter`, `sy-gauge`, ...) where Linux lets a thread
 * name itself, for `top -H`, `ps -L` and the bench's CPU split by thread (bench/floor/threads.mjs). Node 20
 * names every thread `node`. Never the main thread: its name is the process's.
 */
function nameThread(entryUrl, name) {
  if (isMainThread || process.platform !== 'linux') return;
  const role = name.endsWith('-worker') ? name.slice(0, -'-worker'.length) : String(entryUrl).split('/').at(-2);
  try {
    writeFileSync('/proc/thread-self/comm', `sy-${role}`.slice(0, 15));
  } catch {
    // Not writable here (a sandbox): the thread keeps the name it has.
  }
}
