import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import { test } from 'node:test';
import ts from 'typescript';

// The house's layers (README, "Where things are"), lowest first. A folder may import its own files and the
// folders its row names; nothing else. protocol/ is vocabulary (types, schemas, error codes); state/ holds
// the shared state machines built on it (the tables threads share, the catalog, followers) and imports only
// it. metrics/ (the registry and the taps every edge thread loads) sits below control/ and edge/. edge/
// reaches the control plane only through the port types in protocol/, so that the control plane can move
// behind a MessagePort (W3.2) without touching a route.
const ROOT = join(import.meta.dirname, '..');
const MAY_IMPORT: Record<string, readonly string[]> = {
  protocol: [],
  state: ['protocol'],
  store: ['protocol', 'state'],
  workers: ['protocol', 'state', 'store'],
  metrics: ['protocol', 'state', 'workers'],
  control: ['protocol', 'state', 'store', 'workers', 'metrics'],
  edge: ['protocol', 'state', 'store', 'workers', 'metrics'],
  service: ['protocol', 'state', 'store', 'workers', 'metrics', 'control', 'edge', 'cli', 'bin'],
  cli: ['protocol', 'bin/locate.js'],
  bin: ['bin', 'service', 'cli'],
};
const LAYERS = Object.keys(MAY_IMPORT);

function sourceFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile() && /\.(ts|js)$/.test(e.name))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)));
}

/** Every project file a source file imports (static, type-only, re-exports and `import()`), as repo paths. */
function importsOf(file: string): string[] {
  const info = ts.preProcessFile(readFileSync(join(ROOT, file), 'utf8'), true, true);
  return info.importedFiles
    .map((f) => f.fileName)
    .filter((spec) => spec.startsWith('.'))
    .map((spec) => normalize(join(dirname(file), spec)));
}

const layerOf = (file: string) => LAYERS.find((l) => file === l || file.startsWith(l + '/'));
const files = LAYERS.flatMap(sourceFiles);
const graph = new Map(files.map((f) => [f, importsOf(f)]));

test('every import runs down the layers', () => {
  const wrong: string[] = [];
  for (const [file, imports] of graph) {
    const from = layerOf(file)!;
    for (const target of imports) {
      const allowed =
        target.startsWith(from + '/') || MAY_IMPORT[from]!.some((l) => target === l || target.startsWith(l + '/'));
      if (!allowed) wrong.push(`${file} -> ${target}`);
    }
  }
  assert.deepEqual(wrong, [], 'imports against the layers');
});

test('no import circle', () => {
  // Depth-first search over the file graph; a back edge closes a circle, reported as its path.
  const state = new Map<string, 'open' | 'done'>();
  const circles: string[] = [];
  const visit = (file: string, path: string[]) => {
    state.set(file, 'open');
    for (const next of graph.get(file) ?? []) {
      const s = state.get(next);
      if (s === 'open') circles.push([...path.slice(path.indexOf(next)), next].join(' -> '));
      else if (s === undefined && graph.has(next)) visit(next, [...path, next]);
    }
    state.set(file, 'done');
  };
  for (const file of graph.keys()) if (!state.has(file)) visit(file, [file]);
  assert.deepEqual(circles, []);
});

// The rooms of workers/: each may import its own files, those its row names, and load-beside.js (where every
// thread's entry starts), besides the layers workers/ may import. A new room needs a row.
const WORKER_ROOMS: Record<string, readonly string[]> = {
  shared: [],
  translate: ['shared'],
  proxy: ['shared', 'translate'],
  runtime: ['shared', 'translate'],
  meter: ['shared'],
  gauge: ['shared'],
  hardware: ['shared'],
  traces: [],
};

test('the rooms of workers/ import down their rows', () => {
  const rooms = readdirSync(join(ROOT, 'workers'), { withFileTypes: true })
    .filter((e) => e.isDirectory())
    .map((e) => e.name);
  assert.deepEqual(rooms.sort(), Object.keys(WORKER_ROOMS).sort(), 'every room of workers/ has a row');
  const wrong: string[] = [];
  for (const [file, imports] of graph) {
    const from = file.split('/');
    if (from[0] !== 'workers' || from.length < 3) continue;
    for (const target of imports) {
      const to = target.split('/');
      if (to[0] !== 'workers' || target === 'workers/load-beside.js') continue;
      if (to[1] !== from[1] && !WORKER_ROOMS[from[1]!]!.includes(to[1]!)) wrong.push(`${file} -> ${target}`);
    }
  }
  assert.deepEqual(wrong, [], 'imports against the rooms of workers/');
});

// What each thread loads: every worker entry the source names (`new URL('./...entry.js', import.meta.url)`,
// for `new Worker` or piscina), with the rooms its thread may load. An entry loads its module through
// loadBeside (workers/load-beside.js), by name: an edge the import graph does not show, added here.
const THREAD_ROOMS: Record<string, readonly string[]> = {
  'workers/proxy/entry.js': ['protocol', 'state', 'store', 'workers/shared', 'workers/translate', 'workers/proxy'],
  'workers/proxy/relay-entry.js': [
    'protocol',
    'state',
    'store',
    'workers/shared',
    'workers/translate',
    'workers/proxy',
  ],
  'workers/runtime/runtime-entry.js': ['protocol', 'state', 'workers/shared', 'workers/translate', 'workers/runtime'],
  'workers/meter/entry.js': ['protocol', 'state', 'store', 'workers/shared', 'workers/meter'],
  'workers/gauge/entry.js': ['protocol', 'state', 'store', 'workers/shared', 'workers/gauge'],
  'workers/hardware/entry.js': ['protocol', 'workers/shared', 'workers/hardware'],
  // The OpenTelemetry SDK and its exporter, fed span plans: nothing of the service's state.
  'workers/traces/entry.js': ['protocol', 'workers/traces'],
  // An edge thread: the edge, the workers it calls and metrics/, but no control plane (it reaches it over ports).
  'service/edge-entry.js': [
    'protocol',
    'state',
    'store',
    'workers/shared',
    'workers/translate',
    'workers/proxy',
    'workers/runtime',
    'metrics',
    'edge',
    'service/edge-entry.js',
    'service/edge-worker.ts',
    'service/edge-worker-parts.ts',
    'service/edge-admission.ts',
    'service/gateway-wiring.ts',
    'service/edge-feed.ts',
  ],
};
const ENTRY = /new URL\('(\.\/[^']*entry\.js)', import\.meta\.url\)/g;
const BESIDE = /loadBeside\(import\.meta\.url, '([^']+)'\)/g;
const within = (file: string, rooms: readonly string[]) => rooms.some((r) => file === r || file.startsWith(r + '/'));

/** Every project file a thread starting at `entry` loads (type-only imports count: they name what it uses). */
function loadedBy(entry: string): Set<string> {
  const seen = new Set<string>();
  const todo = [entry];
  while (todo.length > 0) {
    const file = todo.pop()!;
    if (seen.has(file)) continue;
    seen.add(file);
    const beside = [...readFileSync(join(ROOT, file), 'utf8').matchAll(BESIDE)].map((m) =>
      join(dirname(file), `${m[1]}.ts`),
    );
    for (const module of beside) assert.ok(graph.has(module), `${file} loads ${module}, which is not there`);
    todo.push(...(graph.get(file) ?? []), ...beside);
  }
  return seen;
}

test('each worker thread loads only the rooms it may use', () => {
  const entries = new Set(
    files.flatMap((f) =>
      [...readFileSync(join(ROOT, f), 'utf8').matchAll(ENTRY)].map((m) => normalize(join(dirname(f), m[1]!))),
    ),
  );
  assert.deepEqual([...entries].sort(), Object.keys(THREAD_ROOMS).sort(), 'every worker entry has a row');
  const wrong: string[] = [];
  for (const [entry, rooms] of Object.entries(THREAD_ROOMS)) {
    const loaded = loadedBy(entry);
    assert.ok(loaded.size > 2, `${entry} loads its module`);
    for (const file of loaded)
      if (!within(file, [...rooms, entry, 'workers/load-beside.js'])) wrong.push(`${entry}: ${file}`);
  }
  assert.deepEqual(wrong, [], 'files loaded by a thread that may not use them');
});

test('the layer check sees imports of every kind', () => {
  // The check itself: type-only imports, re-exports and dynamic imports are edges too.
  const info = ts.preProcessFile(
    "import type { A } from './a.ts';\nexport { b } from '../b.ts';\nawait import('./c.ts');",
    true,
    true,
  );
  assert.deepEqual(
    info.importedFiles.map((f) => f.fileName),
    ['./a.ts', '../b.ts', './c.ts'],
  );
});

test('the repository stands alone: nothing cites a document kept outside it', () => {
  const outside =
    /\b(?:interface|extensions|gauge)\.md\b|shared\/spec\b|\bDESIGN\.md\b|\bSTYLE\.md\b|gauge-sources\.md/;
  const texts = [...LAYERS, 'dashboard', 'bench', 'test', 'docs']
    .flatMap((dir) =>
      readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
        .filter(
          (e) => e.isFile() && /\.(ts|js|mjs|md|html|css)$/.test(e.name) && !e.parentPath.includes('node_modules'),
        )
        .map((e) => relative(ROOT, join(e.parentPath, e.name))),
    )
    .concat('README.md')
    .filter((file) => file !== 'test/layers.test.ts');
  assert.deepEqual(
    texts.filter((file) => outside.test(readFileSync(join(ROOT, file), 'utf8'))),
    [],
  );
});

test('lines are at most 120 characters', () => {
  // Biome (npm run lint) formats code to 120 columns but leaves long strings and comments as they are.
  const long = [...LAYERS, 'dashboard', 'bench', 'test']
    .flatMap((dir) =>
      readdirSync(join(ROOT, dir), { recursive: true, withFileTypes: true })
        .filter((e) => e.isFile() && /\.(ts|js|mjs)$/.test(e.name) && !/node_modules|fixtures/.test(e.parentPath))
        .map((e) => relative(ROOT, join(e.parentPath, e.name))),
    )
    .flatMap((file) =>
      readFileSync(join(ROOT, file), 'utf8')
        .split('\n')
        .flatMap((line, i) => ([...line].length > 120 ? [`${file}:${i + 1}`] : [])),
    );
  assert.deepEqual(long, []);
});
