import { writeFileSync } from 'node:fs';
import { prng } from './prng.ts';

// Writes tiny GGUF models at test time so no binary is committed. The layout follows the GGUF v3 spec
// (ggml docs/gguf.md): header, metadata key/values, tensor infos, padding to `general.alignment`, then the
// tensor data with every tensor's offset aligned. The model is a 2-layer llama with a byte-level SentencePiece
// vocabulary; its weights are small deterministic noise, so it produces bytes, not sense.

const ALIGNMENT = 32;

enum ValueType {
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
}

type Value =
  | { t: 'u32'; v: number }
  | { t: 'i32'; v: number }
  | { t: 'f32'; v: number }
  | { t: 'bool'; v: boolean }
  | { t: 'str'; v: string }
  | { t: 'arr-str'; v: string[] }
  | { t: 'arr-f32'; v: number[] }
  | { t: 'arr-i32'; v: number[] };

export interface TinyModelOptions {
  /** Vocabulary: 3 control tokens, 256 byte tokens and `▁`: 260 tokens. */
  embd?: number;
  layers?: number;
  contextLength?: number;
  architecture?: string;
  /** Dimensions written for `token_embd.weight`, to make a file whose shapes disagree with its metadata. */
  tokenEmbdDims?: [number, number];
  /** ggml type of every 2-D weight: 0 = F32, 1 = F16; other numbers make an unsupported file. */
  weightType?: number;
  seed?: number;
  chatTemplate?: string;
  /**
   * Multiplies the output projection: larger logits make confident next-token choices, which a draft
   * predictor needs before it drafts (node-llama-cpp drafts only tokens above a confidence threshold).
   */
  outputScale?: number;
  /** Leaves a tensor out: the header still reads as whole, llama.cpp refuses the file when it loads it. */
  omitTensor?: string;
  /** Writes these tensors under other names (a block index or name length no real file has). */
  renameTensors?: Record<string, string>;
}

export const TINY_CHAT_TEMPLATE =
  "{% for message in messages %}{{ '<|' + message['role'] + '|>\\n' + message['content'] + '\\n' }}{% endfor %}" +
  "{% if add_generation_prompt %}{{ '<|assistant|>\\n' }}{% endif %}";

class Writer {
  private chunks: Buffer[] = [];
  size = 0;
  push(b: Buffer): void {
    this.chunks.push(b);
    this.size += b.length;
  }
  u32(n: number): void {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(n);
    this.push(b);
  }
  i32(n: number): void {
    const b = Buffer.alloc(4);
    b.writeInt32LE(n);
    this.push(b);
  }
  u64(n: number): void {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(n));
    this.push(b);
  }
  f32(n: number): void {
    const b = Buffer.alloc(4);
    b.writeFloatLE(n);
    this.push(b);
  }
  str(s: string): void {
    const b = Buffer.from(s, 'utf8');
    this.u64(b.length);
    this.push(b);
  }
  pad(): void {
    const rest = this.size % ALIGNMENT;
    if (rest) this.push(Buffer.alloc(ALIGNMENT - rest));
  }
  bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }
}

function writeValue(w: Writer, value: Value): void {
  switch (value.t) {
    case 'u32':
      w.u32(ValueType.UINT32);
      w.u32(value.v);
      return;
    case 'i32':
      w.u32(ValueType.INT32);
      w.i32(value.v);
      return;
    case 'f32':
      w.u32(ValueType.FLOAT32);
      w.f32(value.v);
      return;
    case 'bool':
      w.u32(ValueType.BOOL);
      w.push(Buffer.from([value.v ? 1 : 0]));
      return;
    case 'str':
      w.u32(ValueType.STRING);
      w.str(value.v);
      return;
    case 'arr-str':
      w.u32(ValueType.ARRAY);
      w.u32(ValueType.STRING);
      w.u64(value.v.length);
      value.v.forEach((s) => w.str(s));
      return;
    case 'arr-f32':
      w.u32(ValueType.ARRAY);
      w.u32(ValueType.FLOAT32);
      w.u64(value.v.length);
      value.v.forEach((n) => w.f32(n));
      return;
    case 'arr-i32':
      w.u32(ValueType.ARRAY);
      w.u32(ValueType.INT32);
      w.u64(value.v.length);
      value.v.forEach((n) => w.i32(n));
      return;
  }
}

interface TensorSpec {
  name: string;
  dims: number[];
  type: number;
  /** Norm weights are ones; matrices are noise. */
  fill: 'ones' | 'noise';
  scale?: number;
}

function vocabulary(): { tokens: string[]; scores: number[]; types: number[] } {
  // llama.cpp token types: 1 normal, 2 unknown, 3 control, 6 byte.
  const tokens = ['<unk>', '<s>', '</s>'];
  const types = [2, 3, 3];
  for (let b = 0; b < 256; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
    types.push(6);
  }
  tokens.push('\u2581');
  types.push(1);
  return { tokens, scores: tokens.map((_, i) => -i), types };
}

export const TINY_VOCAB_SIZE = 260;

function tensorBytes(spec: TensorSpec, next: () => number): Buffer {
  const count = spec.dims.reduce((a, b) => a * b, 1);
  const f16 = spec.type === 1;
  const out = Buffer.alloc(count * (f16 ? 2 : 4));
  for (let i = 0; i < count; i++) {
    const v = spec.fill === 'ones' ? 1 : (next() - 0.5) * 0.2 * (spec.scale ?? 1);
    if (f16) out.writeUInt16LE(toHalf(v), i * 2);
    else out.writeFloatLE(v, i * 4);
  }
  return out;
}

/** Float to IEEE half, enough for small weights (no NaN or overflow handling needed here). */
function toHalf(v: number): number {
  const f = new Float32Array([v]);
  const x = new Uint32Array(f.buffer)[0]!;
  const sign = (x >>> 16) & 0x8000;
  const exp = ((x >>> 23) & 0xff) - 127 + 15;
  if (exp <= 0) return sign;
  return sign | (exp << 10) | ((x >>> 13) & 0x3ff);
}

/** The bytes of a tiny llama GGUF. */
export function tinyModelBytes(options: TinyModelOptions = {}): Buffer {
  const embd = options.embd ?? 64;
  const layers = options.layers ?? 2;
  const ff = embd * 2;
  const heads = 4;
  const weightType = options.weightType ?? 0;
  const arch = options.architecture ?? 'llama';
  const vocab = vocabulary();
  const n = vocab.tokens.length;

  const metadata: [string, Value][] = [
    ['general.architecture', { t: 'str', v: arch }],
    ['general.name', { t: 'str', v: 'switchyard-tiny' }],
    ['general.alignment', { t: 'u32', v: ALIGNMENT }],
    ['general.file_type', { t: 'u32', v: weightType === 1 ? 1 : 0 }],
    [`${arch}.context_length`, { t: 'u32', v: options.contextLength ?? 2048 }],
    [`${arch}.embedding_length`, { t: 'u32', v: embd }],
    [`${arch}.block_count`, { t: 'u32', v: layers }],
    [`${arch}.feed_forward_length`, { t: 'u32', v: ff }],
    [`${arch}.attention.head_count`, { t: 'u32', v: heads }],
    [`${arch}.attention.head_count_kv`, { t: 'u32', v: heads }],
    [`${arch}.rope.dimension_count`, { t: 'u32', v: embd / heads }],
    [`${arch}.rope.freq_base`, { t: 'f32', v: 10000 }],
    [`${arch}.attention.layer_norm_rms_epsilon`, { t: 'f32', v: 1e-5 }],
    ['tokenizer.ggml.model', { t: 'str', v: 'llama' }],
    ['tokenizer.ggml.tokens', { t: 'arr-str', v: vocab.tokens }],
    ['tokenizer.ggml.scores', { t: 'arr-f32', v: vocab.scores }],
    ['tokenizer.ggml.token_type', { t: 'arr-i32', v: vocab.types }],
    ['tokenizer.ggml.unknown_token_id', { t: 'u32', v: 0 }],
    ['tokenizer.ggml.bos_token_id', { t: 'u32', v: 1 }],
    ['tokenizer.ggml.eos_token_id', { t: 'u32', v: 2 }],
    ['tokenizer.ggml.add_bos_token', { t: 'bool', v: true }],
    ['tokenizer.chat_template', { t: 'str', v: options.chatTemplate ?? TINY_CHAT_TEMPLATE }],
  ];

  const tensors: TensorSpec[] = [
    { name: 'token_embd.weight', dims: options.tokenEmbdDims ?? [embd, n], type: weightType, fill: 'noise' },
    { name: 'output_norm.weight', dims: [embd], type: 0, fill: 'ones' },
    { name: 'output.weight', dims: [embd, n], type: weightType, fill: 'noise', scale: options.outputScale ?? 1 },
  ];
  for (let i = 0; i < layers; i++) {
    tensors.push(
      { name: `blk.${i}.attn_norm.weight`, dims: [embd], type: 0, fill: 'ones' },
      { name: `blk.${i}.attn_q.weight`, dims: [embd, embd], type: weightType, fill: 'noise' },
      { name: `blk.${i}.attn_k.weight`, dims: [embd, embd], type: weightType, fill: 'noise' },
      { name: `blk.${i}.attn_v.weight`, dims: [embd, embd], type: weightType, fill: 'noise' },
      { name: `blk.${i}.attn_output.weight`, dims: [embd, embd], type: weightType, fill: 'noise' },
      { name: `blk.${i}.ffn_norm.weight`, dims: [embd], type: 0, fill: 'ones' },
      { name: `blk.${i}.ffn_gate.weight`, dims: [embd, ff], type: weightType, fill: 'noise' },
      { name: `blk.${i}.ffn_down.weight`, dims: [ff, embd], type: weightType, fill: 'noise' },
      { name: `blk.${i}.ffn_up.weight`, dims: [embd, ff], type: weightType, fill: 'noise' },
    );
  }

  const kept = tensors
    .filter((t) => t.name !== options.omitTensor)
    .map((t) => ({ ...t, name: options.renameTensors?.[t.name] ?? t.name }));
  tensors.length = 0;
  tensors.push(...kept);
  const next = prng(options.seed ?? 7);
  const datas = tensors.map((t) =>
    t.type === 0 || t.type === 1 ? tensorBytes(t, next) : Buffer.alloc(t.dims.reduce((a, b) => a * b, 1)),
  );

  const w = new Writer();
  w.push(Buffer.from('GGUF', 'ascii'));
  w.u32(3);
  w.u64(tensors.length);
  w.u64(metadata.length);
  for (const [key, value] of metadata) {
    w.str(key);
    writeValue(w, value);
  }
  let offset = 0;
  tensors.forEach((t, i) => {
    w.str(t.name);
    w.u32(t.dims.length);
    t.dims.forEach((d) => w.u64(d));
    w.u32(t.type);
    w.u64(offset);
    offset += Math.ceil(datas[i]!.length / ALIGNMENT) * ALIGNMENT;
  });
  w.pad();
  for (const data of datas) {
    w.push(data);
    w.pad();
  }
  return w.bytes();
}

export function writeTinyModel(path: string, options: TinyModelOptions = {}): string {
  writeFileSync(path, tinyModelBytes(options));
  return path;
}

/** A file that starts like GGUF but whose header is garbage: a tensor count no file could hold. */
export function writeCorruptModel(path: string): string {
  const bytes = tinyModelBytes();
  bytes.writeBigUInt64LE(0xffff_ffff_ffffn, 8);
  writeFileSync(path, bytes);
  return path;
}

/** A model cut off in its tensor data, as an interrupted download leaves it. */
export function writeTruncatedModel(path: string): string {
  const bytes = tinyModelBytes();
  writeFileSync(path, bytes.subarray(0, Math.floor(bytes.length * 0.6)));
  return path;
}

/** A well-formed file whose `token_embd.weight` disagrees with `embedding_length`; llama.cpp refuses it. */
export function writeWrongShapeModel(path: string): string {
  return writeTinyModel(path, { tokenEmbdDims: [32, TINY_VOCAB_SIZE * 2] });
}

/** A file whose header passes every check but that llama.cpp refuses to load: a required tensor is missing. */
export function writeRefusedModel(path: string): string {
  return writeTinyModel(path, { omitTensor: 'output_norm.weight' });
}
