// The byte-level reader of a GGUF header (ggml docs/gguf.md): its metadata and tensor table from a window of the
// file's first bytes, with every count and length bounded (gguf-header.ts reads the windows and judges).

type Scalar = number | bigint | string | boolean;
export type MetaValue = Scalar | { array: number; length: number; head: Scalar[] };

export interface TensorInfo {
  name: string;
  dims: number[];
  type: number;
  offset: number;
}

/** The parser ran past the window it was given: read more and start again. */
export class NeedMore extends Error {}
export class Corrupt extends Error {}

// Bounds no real file comes near; beyond them the header is garbage, not big.
export const MAX_HEADER_BYTES = 256 * 1024 * 1024;
const MAX_COUNT = 10_000_000;
const MAX_STRING = 64 * 1024 * 1024;
// A tensor table beyond these is not a model: llama.cpp refuses names of GGML_MAX_NAME (64) bytes or more, and
// the largest published models hold a few thousand tensors.
const MAX_TENSORS = 100_000;
const MAX_TENSOR_NAME = 63;
export const MAX_BLOCK_INDEX = 16_384;
// Array values kept for inspection (token counts come from `length`, not from keeping every token).
const KEEP_ARRAY_HEAD = 4;

class Cursor {
  pos = 0;
  constructor(
    private readonly buf: Buffer,
    private readonly eof: boolean,
  ) {}
  private need(n: number): void {
    if (this.pos + n > this.buf.length)
      throw this.eof ? new Corrupt('the header runs past the end of the file') : new NeedMore();
  }
  u8(): number {
    this.need(1);
    return this.buf.readUInt8(this.pos++);
  }
  i8(): number {
    this.need(1);
    return this.buf.readInt8(this.pos++);
  }
  u16(): number {
    this.need(2);
    const v = this.buf.readUInt16LE(this.pos);
    this.pos += 2;
    return v;
  }
  i16(): number {
    this.need(2);
    const v = this.buf.readInt16LE(this.pos);
    this.pos += 2;
    return v;
  }
  u32(): number {
    this.need(4);
    const v = this.buf.readUInt32LE(this.pos);
    this.pos += 4;
    return v;
  }
  i32(): number {
    this.need(4);
    const v = this.buf.readInt32LE(this.pos);
    this.pos += 4;
    return v;
  }
  f32(): number {
    this.need(4);
    const v = this.buf.readFloatLE(this.pos);
    this.pos += 4;
    return v;
  }
  f64(): number {
    this.need(8);
    const v = this.buf.readDoubleLE(this.pos);
    this.pos += 8;
    return v;
  }
  u64(): bigint {
    this.need(8);
    const v = this.buf.readBigUInt64LE(this.pos);
    this.pos += 8;
    return v;
  }
  i64(): bigint {
    this.need(8);
    const v = this.buf.readBigInt64LE(this.pos);
    this.pos += 8;
    return v;
  }
  count(what: string, max = MAX_COUNT): number {
    const n = this.u64();
    if (n > BigInt(max)) throw new Corrupt(`${what} ${n} is beyond any real file`);
    return Number(n);
  }
  str(max = MAX_STRING, what = 'a string length of'): string {
    const n = this.count(what, max);
    this.need(n);
    const s = this.buf.toString('utf8', this.pos, this.pos + n);
    this.pos += n;
    return s;
  }
  scalar(type: number): Scalar {
    switch (type) {
      case 0:
        return this.u8();
      case 1:
        return this.i8();
      case 2:
        return this.u16();
      case 3:
        return this.i16();
      case 4:
        return this.u32();
      case 5:
        return this.i32();
      case 6:
        return this.f32();
      case 7:
        return this.u8() !== 0;
      case 8:
        return this.str();
      case 10:
        return this.u64();
      case 11:
        return this.i64();
      case 12:
        return this.f64();
      default:
        throw new Corrupt(`unknown metadata value type ${type}`);
    }
  }
  value(type: number): MetaValue {
    if (type !== 9) return this.scalar(type);
    const array = this.u32();
    if (array === 9) throw new Corrupt('nested metadata arrays');
    const length = this.count('an array length of');
    const head: Scalar[] = [];
    for (let i = 0; i < length; i++) {
      const v = this.scalar(array);
      if (i < KEEP_ARRAY_HEAD) head.push(v);
    }
    return { array, length, head };
  }
}

export interface Parsed {
  version: number;
  meta: Map<string, MetaValue>;
  tensors: TensorInfo[];
  dataStart: number;
}

export function parse(buf: Buffer, eof: boolean): Parsed {
  const c = new Cursor(buf, eof);
  if (buf.length >= 4 && buf.toString('latin1', 0, 4) !== 'GGUF') throw new Corrupt('not a GGUF file (bad magic)');
  c.u32();
  const version = c.u32();
  if (version !== 2 && version !== 3) throw new Corrupt(`GGUF version ${version} is not 2 or 3`);
  const tensorCount = c.count('a tensor count of', MAX_TENSORS);
  const kvCount = c.count('a metadata count of');
  const meta = new Map<string, MetaValue>();
  for (let i = 0; i < kvCount; i++) {
    const key = c.str();
    meta.set(key, c.value(c.u32()));
  }
  const tensors: TensorInfo[] = [];
  for (let i = 0; i < tensorCount; i++) {
    const name = c.str(MAX_TENSOR_NAME, `tensor ${i}'s name length of`);
    const nDims = c.u32();
    if (nDims < 1 || nDims > 4) throw new Corrupt(`tensor \`${name}\` has ${nDims} dimensions`);
    const dims: number[] = [];
    for (let d = 0; d < nDims; d++) dims.push(c.count(`tensor \`${name}\` dimension`, Number.MAX_SAFE_INTEGER));
    if (dims.reduce((a, b) => a * b, 1) > Number.MAX_SAFE_INTEGER)
      throw new Corrupt(`tensor \`${name}\` has more elements than any file can hold`);
    const type = c.u32();
    const offset = c.count(`tensor \`${name}\` offset`, Number.MAX_SAFE_INTEGER);
    tensors.push({ name, dims, type, offset });
  }
  const alignment = num(meta.get('general.alignment')) ?? 32;
  if (alignment <= 0 || (alignment & (alignment - 1)) !== 0)
    throw new Corrupt(`alignment ${alignment} is not a power of two`);
  return { version, meta, tensors, dataStart: Math.ceil(c.pos / alignment) * alignment };
}

export function num(v: MetaValue | undefined): number | null {
  if (typeof v === 'number') return v;
  if (typeof v === 'bigint') return Number(v);
  return null;
}

export function str(v: MetaValue | undefined): string | null {
  return typeof v === 'string' ? v : null;
}
