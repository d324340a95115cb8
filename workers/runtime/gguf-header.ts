import { open } from 'node:fs/promises';
import type { RuntimeModelHealth } from '../../protocol/http/runtime.ts';
import {
  Corrupt,
  MAX_BLOCK_INDEX,
  MAX_HEADER_BYTES,
  NeedMore,
  num,
  parse,
  str,
  type MetaValue,
  type Parsed,
} from './gguf-parse.ts';
import { ARCHITECTURES, FILE_TYPES, GGML_TYPES } from './gguf-types.ts';

// Reads a GGUF header (ggml docs/gguf.md) in JavaScript, so a model can be described and judged without
// llama.cpp: loading a malformed file there can abort the whole process. Only the header is read, in growing
// windows, never the tensor data.

export type GgufHealth = RuntimeModelHealth;

export interface GgufInfo {
  health: GgufHealth;
  /** Why the health is not `ok`; null when it is. */
  problem: string | null;
  sizeBytes: number;
  version: number | null;
  architecture: string | null;
  displayName: string | null;
  parameterCount: number | null;
  /** Quantization, e.g. `Q4_K_M`; from `general.file_type`, else the most common weight type. */
  fileType: string | null;
  contextLength: number | null;
  embeddingLength: number | null;
  blockCount: number | null;
  hasChatTemplate: boolean;
  /** Where the weights sit and what the KV cache needs; null when the header could not be read that far. */
  layout: GgufLayout | null;
}

/** The tensor table summed up for placement (workers/runtime/placement.ts). Bytes are tensor data bytes. */
export interface GgufLayout {
  /** Weights of each repeating block (`blk.N.*`), by N. */
  layerBytes: number[];
  /** `output.weight` and `output_norm.weight`: llama.cpp offloads them as the layer after the last block. */
  outputBytes: number;
  /** Everything else (`token_embd.weight`, position and rope tables): kept in host memory. */
  otherBytes: number;
  /** Names of tensor types with no known size; their tensors count 0 bytes above. */
  unknownTypes: string[];
  vocabSize: number | null;
  feedForwardLength: number | null;
  attention: AttentionShape;
}

/** Head counts and sizes as the metadata gives them; `guessed` says which figure had to be assumed. */
export interface AttentionShape {
  headCount: number | null;
  headCountKv: number | null;
  keyLength: number | null;
  valueLength: number | null;
  /** Why the KV layout is an assumption (a per-layer array, a missing figure), or null. */
  guessed: string | null;
}

/** Reads and judges the GGUF file at `path`. Never throws for a bad file; I/O errors do throw. */
export async function readGgufHeader(path: string): Promise<GgufInfo> {
  const file = await open(path, 'r');
  try {
    const sizeBytes = (await file.stat()).size;
    const info = (health: GgufHealth, problem: string | null, rest: Partial<GgufInfo> = {}): GgufInfo => ({
      health,
      problem,
      sizeBytes,
      version: null,
      architecture: null,
      displayName: null,
      parameterCount: null,
      fileType: null,
      contextLength: null,
      embeddingLength: null,
      blockCount: null,
      hasChatTemplate: false,
      layout: null,
      ...rest,
    });
    let window = Math.min(sizeBytes, 1024 * 1024);
    for (;;) {
      const buf = Buffer.alloc(window);
      const { bytesRead } = await file.read(buf, 0, window, 0);
      const eof = bytesRead >= sizeBytes;
      try {
        return judge(parse(buf.subarray(0, bytesRead), eof), sizeBytes, info);
      } catch (err) {
        if (err instanceof Corrupt) {
          // A header cut short is a partial download when the file began as a GGUF at all.
          const cut = eof && err.message.startsWith('the header runs past') && sizeBytes >= 8;
          return info(cut ? 'partial' : 'corrupt', err.message);
        }
        if (!(err instanceof NeedMore)) throw err;
        if (window >= MAX_HEADER_BYTES) return info('corrupt', 'the header is larger than any real model header');
        window = Math.min(sizeBytes, window * 4, MAX_HEADER_BYTES);
      }
    }
  } finally {
    await file.close();
  }
}

function judge(
  p: Parsed,
  sizeBytes: number,
  info: (h: GgufHealth, problem: string | null, rest?: Partial<GgufInfo>) => GgufInfo,
): GgufInfo {
  const architecture = str(p.meta.get('general.architecture'));
  const tokens = p.meta.get('tokenizer.ggml.tokens');
  const vocab = typeof tokens === 'object' ? tokens.length : null;
  const embeddingLength = architecture ? num(p.meta.get(`${architecture}.embedding_length`)) : null;
  let parameterCount = 0;
  let dataEnd = p.dataStart;
  const typeCounts = new Map<number, number>();
  let unknownType: string | null = null;
  for (const t of p.tensors) {
    const elements = t.dims.reduce((a, b) => a * b, 1);
    parameterCount += elements;
    const traits = GGML_TYPES.get(t.type);
    if (!traits) {
      unknownType ??= `tensor \`${t.name}\` has unknown type ${t.type}`;
      continue;
    }
    if (t.dims.length >= 2) typeCounts.set(t.type, (typeCounts.get(t.type) ?? 0) + 1);
    const [block, bytes] = traits;
    if (t.dims[0]! % block !== 0)
      return info('corrupt', `tensor \`${t.name}\` row does not fill whole ${traits[2]} blocks`);
    dataEnd = Math.max(dataEnd, p.dataStart + t.offset + (elements / block) * bytes);
  }
  const fileTypeId = num(p.meta.get('general.file_type'));
  let fileType = fileTypeId === null ? null : (FILE_TYPES.get(fileTypeId) ?? null);
  if (fileType === null && typeCounts.size > 0) {
    const [dominant] = [...typeCounts].sort((a, b) => b[1] - a[1])[0]!;
    fileType = GGML_TYPES.get(dominant)![2];
  }
  const rest: Partial<GgufInfo> = {
    version: p.version,
    architecture,
    displayName: str(p.meta.get('general.name')),
    parameterCount,
    fileType,
    contextLength: architecture ? num(p.meta.get(`${architecture}.context_length`)) : null,
    embeddingLength,
    blockCount: architecture ? num(p.meta.get(`${architecture}.block_count`)) : null,
    hasChatTemplate: typeof p.meta.get('tokenizer.chat_template') === 'string',
  };
  const layout = layoutOf(p, architecture, vocab);
  if (typeof layout === 'string') return info('corrupt', layout, rest);
  rest.layout = layout;
  if (!architecture) return info('corrupt', 'no `general.architecture`', rest);
  // Shapes that disagree with the metadata make llama.cpp refuse the file; say so before anyone loads it.
  const embd = p.tensors.find((t) => t.name === 'token_embd.weight');
  if (
    embd &&
    embeddingLength !== null &&
    vocab !== null &&
    (embd.dims[0] !== embeddingLength || embd.dims[1] !== vocab)
  ) {
    return info(
      'corrupt',
      `tensor \`token_embd.weight\` is [${embd.dims.join(', ')}], the metadata says [${embeddingLength}, ${vocab}]`,
      rest,
    );
  }
  if (!ARCHITECTURES.has(architecture))
    return info('unsupported', `architecture \`${architecture.slice(0, 64)}\` is not supported`, rest);
  if (unknownType) return info('unsupported', unknownType, rest);
  if (dataEnd > sizeBytes)
    return info('partial', `tensor data ends at byte ${dataEnd}, the file has ${sizeBytes}`, rest);
  return info('ok', null, rest);
}

/** Per-layer weight bytes and the attention figures, or why the table cannot be a model's. */
function layoutOf(p: Parsed, architecture: string | null, vocabSize: number | null): GgufLayout | string {
  const layerBytes: number[] = [];
  let outputBytes = 0;
  let otherBytes = 0;
  const unknown = new Set<string>();
  for (const t of p.tensors) {
    const traits = GGML_TYPES.get(t.type);
    if (!traits) unknown.add(`type ${t.type}`);
    const bytes = traits ? (t.dims.reduce((a, b) => a * b, 1) / traits[0]) * traits[1] : 0;
    const block = /^blk\.(\d{1,6})\./.exec(t.name);
    if (block) {
      const index = Number(block[1]);
      if (index > MAX_BLOCK_INDEX) return `tensor \`${t.name}\` names a block beyond any real model`;
      while (layerBytes.length <= index) layerBytes.push(0);
      layerBytes[index]! += bytes;
    } else if (
      t.name === 'output.weight' ||
      t.name === 'output_norm.weight' ||
      t.name === 'output_norm.bias' ||
      t.name === 'output.bias'
    ) {
      outputBytes += bytes;
    } else otherBytes += bytes;
  }
  const blockCount = architecture ? num(p.meta.get(`${architecture}.block_count`)) : null;
  while (blockCount !== null && blockCount <= MAX_BLOCK_INDEX && layerBytes.length < blockCount) layerBytes.push(0);
  return {
    layerBytes,
    outputBytes,
    otherBytes,
    unknownTypes: [...unknown],
    vocabSize,
    feedForwardLength: architecture ? perLayer(p.meta.get(`${architecture}.feed_forward_length`)).value : null,
    attention: attentionOf(p, architecture),
  };
}

/** A figure that may be one number or one per layer (OpenELM, Jamba): the largest, and whether it varied. */
function perLayer(v: MetaValue | undefined): { value: number | null; varies: boolean } {
  if (typeof v === 'object' && v !== null) {
    const nums = v.head.map((x) => (typeof x === 'bigint' ? Number(x) : typeof x === 'number' ? x : 0));
    // Only the array's first values are kept: the rest may differ, so the layout is a guess either way.
    return { value: nums.length > 0 ? Math.max(...nums) : null, varies: true };
  }
  return { value: num(v), varies: false };
}

function attentionOf(p: Parsed, architecture: string | null): AttentionShape {
  const key = (k: string) => (architecture ? p.meta.get(`${architecture}.attention.${k}`) : undefined);
  const heads = perLayer(key('head_count'));
  const kvHeads = perLayer(key('head_count_kv'));
  const guesses: string[] = [];
  if (heads.value === null) guesses.push('no attention head count');
  if (heads.varies || kvHeads.varies) guesses.push('head counts vary by layer');
  return {
    headCount: heads.value,
    headCountKv: kvHeads.value,
    keyLength: num(key('key_length')),
    valueLength: num(key('value_length')),
    guessed: guesses.length > 0 ? guesses.join('; ') : null,
  };
}
