// JSON text for values that JSON.parse accepted (a client's request body, a merge of one): no toJSON, no
// cycles, no depth limit. No I/O.

/**
 * A parsed JSON value as text, exactly as `JSON.stringify` writes it, at any depth. JSON.stringify recurses,
 * so a value nested a few thousand levels deep (JSON.parse, which does not recurse, takes any depth) would
 * overflow the stack; such a value is written by an explicit stack instead. The common case pays nothing.
 */
export function jsonText(value: unknown): string {
  try {
    return JSON.stringify(value);
  } catch (err) {
    if (!(err instanceof RangeError)) throw err;
    return stringifyDeep(value);
  }
}

type Json = Record<string, unknown>;
type Frame = { array: unknown[]; keys: null; i: number } | { object: Json; keys: string[]; i: number; written: number };

/** JSON.stringify for parsed JSON values (no toJSON, no cycles), without recursion. */
export function stringifyDeep(root: unknown): string {
  const out: string[] = [];
  const stack: Frame[] = [];
  /** Writes a scalar, or opens a container and pushes its frame. */
  const open = (value: unknown): void => {
    if (Array.isArray(value)) {
      out.push('[');
      stack.push({ array: value, keys: null, i: 0 });
    } else if (value !== null && typeof value === 'object') {
      out.push('{');
      stack.push({ object: value as Json, keys: Object.keys(value), i: 0, written: 0 });
    } else out.push(JSON.stringify(value) ?? 'null');
  };
  open(root);
  while (stack.length > 0) {
    const frame = stack[stack.length - 1]!;
    if (frame.keys === null) {
      if (frame.i === frame.array.length) {
        out.push(']');
        stack.pop();
        continue;
      }
      if (frame.i > 0) out.push(',');
      open(frame.array[frame.i++]);
      continue;
    }
    // As JSON.stringify does, members whose value has no JSON form (undefined, functions) are left out.
    let key: string | undefined;
    while (frame.i < frame.keys.length) {
      const k = frame.keys[frame.i++]!;
      const v = frame.object[k];
      if (v !== undefined && typeof v !== 'function' && typeof v !== 'symbol') {
        key = k;
        break;
      }
    }
    if (key === undefined) {
      out.push('}');
      stack.pop();
      continue;
    }
    if (frame.written++ > 0) out.push(',');
    out.push(JSON.stringify(key), ':');
    open(frame.object[key]);
  }
  return out.join('');
}
