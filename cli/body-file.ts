import { readFileSync, statSync } from 'node:fs';
import { CliError, EXIT } from './client.ts';

// A request body a person wrote in a file (a preset, a route pack, a budget, an alert rule): JSON, or YAML for
// the hand-written kind. Anything wrong with the file itself (missing, too big, not JSON or YAML, not one
// object) is a usage error (exit 2) naming the file; what the service thinks of the object is its answer.

const MAX_BYTES = 1024 * 1024;

/** The object the file holds; YAML when the name ends .yaml/.yml or the text is not JSON. */
export async function readBodyFile(file: string): Promise<Record<string, unknown>> {
  let size: number;
  try {
    const stat = statSync(file);
    if (!stat.isFile()) throw new CliError(`${file} is not a file.`, EXIT.usage);
    size = stat.size;
  } catch (err) {
    if (err instanceof CliError) throw err;
    throw new CliError(`Cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}.`, EXIT.usage);
  }
  if (size > MAX_BYTES) throw new CliError(`${file} is over 1 MiB; a body file is at most 1 MiB.`, EXIT.usage);
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (err) {
    throw new CliError(`Cannot read ${file}: ${(err as NodeJS.ErrnoException).code ?? 'error'}.`, EXIT.usage);
  }
  const value = /\.ya?ml$/i.test(file) ? await parseYaml(file, text) : await parseJsonOrYaml(file, text);
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new CliError(`${file} must hold one object (a mapping), not ${describe(value)}.`, EXIT.usage);
  return value as Record<string, unknown>;
}

function describe(value: unknown): string {
  if (value === null || value === undefined) return 'nothing';
  return Array.isArray(value) ? 'a list' : `a ${typeof value}`;
}

async function parseJsonOrYaml(file: string, text: string): Promise<unknown> {
  try {
    return JSON.parse(text);
  } catch {
    return parseYaml(file, text, true);
  }
}

async function parseYaml(file: string, text: string, orJson = false): Promise<unknown> {
  // Loaded only for a YAML file: the other commands start without it.
  const { parseDocument } = await import('yaml');
  const doc = parseDocument(text, { uniqueKeys: true });
  const error = doc.errors[0];
  if (error !== undefined) {
    // The first line of the message, which ends "at line L, column C:"; the source excerpt under it is left out.
    const message = (error.message.split('\n')[0] ?? '').replace(/:$/, '');
    throw new CliError(`${file} is not valid ${orJson ? 'JSON or YAML' : 'YAML'}: ${message}.`, EXIT.usage);
  }
  return doc.toJS({ maxAliasCount: 100 });
}
