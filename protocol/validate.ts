import type { Static, TSchema } from '@sinclair/typebox';
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler';
import { ValueErrorType } from '@sinclair/typebox/errors';
import { ServiceError } from './errors.ts';

// Schemas are compiled once, at module load of whoever calls `compile`.
export function compile<T extends TSchema>(schema: T): TypeCheck<T> {
  return TypeCompiler.Compile(schema);
}

/** `/runtime/tuning/threads` -> `runtime.tuning.threads`; `/cors/allowedOrigins/2` -> `cors.allowedOrigins[2]`. */
export function paramOf(pointer: string): string | null {
  if (pointer === '') return null;
  let out = '';
  for (const raw of pointer.slice(1).split('/')) {
    const part = raw.replaceAll('~1', '/').replaceAll('~0', '~');
    out += /^\d+$/.test(part) ? `[${part}]` : out === '' ? part : `.${part}`;
  }
  return out;
}

/**
 * Checks a typed write. An unknown field is INVALID_JSON (global rule 1); any other mismatch is
 * INVALID_REQUEST naming the first offending field.
 */
export function checkBody<T extends TSchema>(check: TypeCheck<T>, value: unknown): Static<T> {
  if (check.Check(value)) return value;
  const errors = [...check.Errors(value)];
  const unknown = errors.find((e) => e.type === ValueErrorType.ObjectAdditionalProperties);
  if (unknown) {
    throw new ServiceError('INVALID_JSON', `Unknown field \`${paramOf(unknown.path)}\`.`, {
      param: paramOf(unknown.path),
    });
  }
  const first = errors[0];
  const param = first ? paramOf(first.path) : null;
  const message = first ? `${param ?? 'body'}: ${first.message}.` : 'The request body is not valid.';
  throw new ServiceError('INVALID_REQUEST', message, { param });
}
