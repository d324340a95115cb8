import { lstat, readdir } from 'node:fs/promises';
import { isAbsolute, join, relative, resolve, sep } from 'node:path';
import { ServiceError } from '../../protocol/errors.ts';
import type { RuntimeModelHealth, RuntimeModelList, RuntimeModelView } from '../../protocol/http/runtime.ts';
import { modelsDirectoryProblem } from '../../protocol/http/settings.ts';
import type { ProviderTarget } from '../../protocol/messages.ts';
import type { UpstreamModel } from '../../protocol/providers.ts';
import { readGgufHeader } from './gguf-header.ts';

// The model library: the `*.gguf` files under the models directory. This module reads headers only (no
// llama.cpp), so the edge may list the library itself. Names are paths relative to the directory; a name
// never resolves outside it.

// Deep enough for `publisher/model/file.gguf` layouts; a bound keeps a pathological tree from running forever.
const MAX_DEPTH = 4;
const MAX_FILES = 2000;

/** Relative, `/`-separated names of the GGUF files under `dir`; a missing directory is an empty library. */
async function ggufNames(dir: string): Promise<string[]> {
  const names: string[] = [];
  async function walk(rel: string, depth: number): Promise<void> {
    let entries;
    try {
      entries = await readdir(join(dir, rel), { withFileTypes: true });
    } catch (err) {
      if (rel === '' && (err as NodeJS.ErrnoException).code === 'ENOENT') return;
      if (rel === '') throw err;
      return;
    }
    for (const e of entries) {
      if (names.length >= MAX_FILES) return;
      const name = rel === '' ? e.name : `${rel}/${e.name}`;
      // Symbolic links are not followed: a link could lead out of the directory or into a loop.
      if (e.isDirectory() && depth < MAX_DEPTH && !e.name.startsWith('.')) await walk(name, depth + 1);
      else if (e.isFile() && e.name.toLowerCase().endsWith('.gguf')) names.push(name);
    }
  }
  await walk('', 0);
  return names.sort();
}

/**
 * llama.cpp's verdicts on files whose header check passed, by `verdictKey`: the reason it refused that version
 * of the file. A file that changes gets a new key, so it is judged again.
 */
export type Verdicts = ReadonlyMap<string, string>;

export const verdictKey = (name: string, sizeBytes: number, modifiedAt: string) =>
  `${name}\0${sizeBytes}\0${modifiedAt}`;

/**
 * A library file that cannot be served. 400, not 404 (the file is there, and the client is told what is wrong
 * with it) and not 409 or 5xx, which the official clients retry although nothing changes until the file does.
 */
export function unhealthyModelError(name: string, health: RuntimeModelHealth, problem: string): ServiceError {
  return new ServiceError(
    'INVALID_REQUEST',
    `The embedded model \`${name.slice(0, 200)}\` cannot be served: its file is ${health} ` +
      `(${problem.slice(0, 300)}). Replace the file; GET /v1/runtime/models lists the library's health.`,
    { param: 'model', details: { health, problem: problem.slice(0, 300) } },
  );
}

/** The absolute path of model `name`, or MODEL_NOT_FOUND for a name that is not a GGUF inside `dir`. */
export function resolveModelPath(dir: string, name: string): string {
  const missing = () =>
    new ServiceError('MODEL_NOT_FOUND', `No embedded model named \`${name.slice(0, 200)}\`.`, { param: 'model' });
  const invalid = modelsDirectoryProblem(dir);
  if (invalid !== null) throw new ServiceError('UPSTREAM_ERROR', invalid);
  // Names are exactly what the listing produces: no empty, dot or hidden segments, no backslashes.
  if (!name.toLowerCase().endsWith('.gguf') || name.includes('\\') || name.includes('\0') || isAbsolute(name))
    throw missing();
  if (name.split('/').some((part) => part === '' || part.startsWith('.'))) throw missing();
  const root = resolve(dir);
  const path = resolve(root, name);
  const rel = relative(root, path);
  if (rel === '' || rel.startsWith('..') || isAbsolute(rel) || rel.split(sep).some((part) => part.startsWith('.')))
    throw missing();
  return path;
}

/**
 * The library, or an empty one with the reason the directory cannot be read: a stored setting must not turn
 * every library read into a failure (a NUL byte makes `readdir` throw before it reaches the file system).
 * The reason names the error code, never the path.
 */
export async function readLibrary(dir: string, verdicts: Verdicts = new Map()): Promise<RuntimeModelList> {
  const invalid = modelsDirectoryProblem(dir);
  if (invalid !== null) return { data: [], problem: `${invalid} Set it again with PATCH /v1/settings.` };
  let names: string[];
  try {
    names = await ggufNames(dir);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (typeof code !== 'string') throw err;
    return { data: [], problem: `The models directory cannot be read (${code.slice(0, 40)}).` };
  }
  return { data: await views(dir, names, verdicts), problem: null };
}

/** The library's models; a directory that cannot be read is UPSTREAM_ERROR with the reason. */
export async function listRuntimeModels(dir: string, verdicts?: Verdicts): Promise<RuntimeModelView[]> {
  const { data, problem } = await readLibrary(dir, verdicts);
  if (problem !== null) throw new ServiceError('UPSTREAM_ERROR', problem);
  return data;
}

async function views(dir: string, names: string[], verdicts: Verdicts): Promise<RuntimeModelView[]> {
  const views: RuntimeModelView[] = [];
  for (const name of names) {
    const path = join(dir, name);
    try {
      const stat = await lstat(path);
      const h = await readGgufHeader(path);
      const modifiedAt = new Date(stat.mtimeMs).toISOString();
      const refused = h.health === 'ok' ? verdicts.get(verdictKey(name, h.sizeBytes, modifiedAt)) : undefined;
      views.push({
        name,
        health: refused === undefined ? h.health : 'corrupt',
        problem: refused ?? h.problem,
        sizeBytes: h.sizeBytes,
        architecture: h.architecture,
        parameterCount: h.parameterCount,
        fileType: h.fileType,
        contextLength: h.contextLength,
        modifiedAt,
      });
    } catch {
      // Removed or unreadable between listing and reading: it is not in the library.
    }
  }
  return views;
}

/**
 * The ModelLister for `embedded` providers: every healthy model in the library. Embedding models
 * (encoder architectures) serve embeddings only; the rest serve styleA chat, styleB messages and embeddings.
 */
export function listEmbeddedModels(
  modelsDirectory: () => string,
  verdicts?: Verdicts,
): (target: ProviderTarget, credentialRef: string | null) => Promise<UpstreamModel[]> {
  return async () => {
    const views = await listRuntimeModels(modelsDirectory(), verdicts);
    return views
      .filter((v) => v.health === 'ok')
      .map((v) => ({
        upstreamModelId: v.name,
        displayName: v.name.replace(/\.gguf$/i, ''),
        created: Math.floor(Date.parse(v.modifiedAt) / 1000),
        contextWindow: v.contextLength,
        families: ENCODERS.has(v.architecture ?? '')
          ? ['styleA.embeddings']
          : ['styleA.chat_completions', 'styleA.embeddings', 'styleA.responses', 'styleB.messages'],
      }));
  };
}

const ENCODERS = new Set([
  'bert',
  'nomic-bert',
  'nomic-bert-moe',
  'jina-bert-v2',
  'neo-bert',
  'modern-bert',
  't5encoder',
  'gemma-embedding',
]);
