// Every worker's .js entry loads its module through this; worker threads do not inherit the main thread's
// loader. In a build (bin/build.js) the compiled module sits beside the entry and is imported as it is; in
// the source tree there is none, and the TypeScript is loaded through tsx, registered for this thread.
import { existsSync } from 'node:fs';

/** Imports `<name>.js` beside `entryUrl` when it exists, else `<name>.ts` through tsx. */
export async function loadBeside(entryUrl, name) {
  const compiled = new URL(`./${name}.js`, entryUrl);
  if (existsSync(compiled)) return import(compiled.href);
  const { register } = await import('tsx/esm/api');
  register();
  return import(new URL(`./${name}.ts`, entryUrl).href);
}
