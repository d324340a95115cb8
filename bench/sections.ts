import { existsSync, readFileSync, writeFileSync } from 'node:fs';

// RESULTS.md is rewritten by each full `npm run bench`; a scenario with a script of its own (bench/gauge.ts),
// and the figures sessions add by hand, keep their section there between two markers, which the full run
// carries over.

/** bench/gauge.ts's section: gateway latency with and without a Gauge refresh running. */
export const GAUGE_SECTION = 'gauge';
/** bench/runtime.ts's section: the embedded runtime through the service beside node-llama-cpp in process. */
export const RUNTIME_SECTION = 'runtime';
/** bench/catalog-writes.ts's section: creates/s and /health latency while 8 writers fill the catalog. */
export const CATALOG_SECTION = 'catalog-writes';
/** The figures sessions measured by hand (compare.sh, gc.sh, profiles): kept at the end, never regenerated. */
export const SESSIONS_SECTION = 'sessions';

const start = (name: string) => `<!-- ${name}:start -->`;
const end = (name: string) => `<!-- ${name}:end -->`;

function sectionOf(text: string, name: string): string | null {
  const a = text.indexOf(start(name));
  const b = text.indexOf(end(name));
  return a === -1 || b < a ? null : text.slice(a, b + end(name).length);
}

/** The text of section `name` of `file` (markers included), or null. */
export function readSection(file: string, name: string): string | null {
  return existsSync(file) ? sectionOf(readFileSync(file, 'utf8'), name) : null;
}

/** Puts `md` into `file` as the section `name`, replacing the one there or appending it. */
export function writeSection(file: string, name: string, md: string): void {
  const text = existsSync(file) ? readFileSync(file, 'utf8') : '';
  const section = `${start(name)}\n${md.trim()}\n${end(name)}`;
  const old = sectionOf(text, name);
  writeFileSync(file, old === null ? `${text.trimEnd()}\n\n${section}\n` : text.replace(old, section));
}

/** `next` with the section `name` of the file it replaces, if that had one. */
export function carrySection(file: string, name: string, next: string): string {
  const old = existsSync(file) ? sectionOf(readFileSync(file, 'utf8'), name) : null;
  return old === null ? next : `${next.trimEnd()}\n\n${old}\n`;
}
