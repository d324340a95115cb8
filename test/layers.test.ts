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
