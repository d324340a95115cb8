import { parseArgs } from 'node:util';
import { CliError, EXIT } from './client.ts';

// What every command's parsing shares: strict options (an unknown one is a usage error, exit 2), at most so
// many positionals, whole numbers and comma lists checked before anything is sent.

export class UsageError extends CliError {
  constructor(message: string) {
    super(message, EXIT.usage);
  }
}

/** An option parseArgs refused, said plainly; cli/index.ts adds the command's usage. */
export class OptionError extends UsageError {}

/** node's parseArgs messages (`Unknown option '--x'. To specify a positional argument ...`) in a few words. */
export function optionMessage(err: { code?: string; message: string }): string {
  const name = /'(-{1,2}[^'\s<]*)/.exec(err.message)?.[1] ?? 'an option';
  switch (err.code) {
    case 'ERR_PARSE_ARGS_UNKNOWN_OPTION':
      return `Unknown option ${name}.`;
    case 'ERR_PARSE_ARGS_INVALID_OPTION_VALUE':
      return /does not take/.test(err.message) ? `${name} takes no value.` : `${name} needs a value.`;
    default:
      return err.message;
  }
}

export interface Parsed {
  values: { json?: boolean } & Record<string, string | boolean | undefined>;
  positionals: string[];
}

export type OptionSpec = Record<string, { type: 'string' | 'boolean'; short?: string }>;

export function options(args: string[], extra: OptionSpec = {}): Parsed {
  try {
    return parseArgs({
      args,
      options: { json: { type: 'boolean' }, ...extra },
      allowPositionals: true,
      strict: true,
    }) as Parsed;
  } catch (err) {
    throw new OptionError(optionMessage(err as Error & { code?: string }));
  }
}

export const str = (v: string | boolean | undefined) => (typeof v === 'string' ? v : undefined);

export function intOption(value: string | undefined, name: string, min: number, max: number, fallback: number): number {
  if (value === undefined) return fallback;
  const n = /^\d+$/.test(value) ? Number(value) : NaN;
  if (!Number.isSafeInteger(n) || n < min || n > max)
    throw new UsageError(`${name} must be a whole number from ${min} to ${max}.`);
  return n;
}

export const scopesOption = (value: string | undefined) =>
  value === undefined
    ? null
    : value
        .split(',')
        .map((s) => s.trim())
        .filter(Boolean);

export function positionals(list: string[], allowed: number, usage: string): string[] {
  if (list.length > allowed) throw new UsageError(`Too many arguments. Usage: ${usage}`);
  return list;
}
