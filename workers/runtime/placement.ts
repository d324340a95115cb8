import type { Confidence, HardwareGpu } from '../../protocol/http/hardware.ts';
import type { GgufLayout } from './gguf-header.ts';
import type { PlacementAnswer } from '../../protocol/http/runtime.ts';

// Where a model fits, by arithmetic alone: the tensor table's bytes per layer, a KV cache from the attention
// figures, and an estimate of llama.cpp's compute buffers, against the hardware probe's figures. Pure, so the
// numbers can be checked by hand; POST /v1/runtime/placement feeds it.

/** Sequences per model and context per sequence when `runtime.tuning` says 0 (automatic). */
export const DEFAULT_PARALLEL = 4;
export const DEFAULT_CONTEXT = 4096;
/** llama.cpp's default micro-batch: the compute graph is sized for this many tokens at once. */
const MAX_UBATCH = 512;
/** The GPU backend's own buffers and the driver's share; the probe's GPU figure is the total, not what is free. */
export const GPU_RESERVE_BYTES = 256 * 1024 * 1024;
/** f16 keys and values, llama.cpp's default cache type. */
const KV_ELEMENT_BYTES = 2;

/**
 * Architectures whose cache is not one full-attention K and V per layer: sliding windows (smaller), latent
 * attention (smaller), recurrent state (a fixed size) or hybrids. The full-attention figure is then a guess.
 */
const KV_GUESSED = new Set([
  'gemma2',
  'gemma3',
  'gemma3n',
  'cohere2',
  'gpt-oss',
  'llama4',
  'deepseek2',
  'mamba',
  'mamba2',
  'jamba',
  'rwkv6',
  'rwkv6qwen2',
  'rwkv7',
  'arwkv7',
  'falcon-h1',
  'granitehybrid',
  'nemotron_h',
  'plamo2',
  'lfm2',
  't5',
  't5encoder',
]);

export interface PlacementModel {
  architecture: string;
  embeddingLength: number;
  /** The model's own context length; null when the header has none. */
  contextLength: number | null;
  layout: GgufLayout;
}

/** runtime.tuning with 0 = automatic, except gpuLayers, which may also be `auto` (the most layers that fit). */
export interface PlacementTuning {
  contextSize: number;
  parallel: number;
  batchSize: number;
  gpuLayers: number | 'auto';
}

export interface PlacementHardware {
  /** What can be allocated without swapping; null when the host did not say. */
  ramAvailableBytes: number | null;
  gpus: Pick<HardwareGpu, 'backend' | 'memoryKind' | 'memoryBytes' | 'confidence'>[];
  /** The probe failed and only Node's own figures are known. */
  partial: boolean;
}

/** The answer's figures; `resolved` is what the answer calls `tuning`: automatic (0) figures resolved. */
export type Placement = Omit<PlacementAnswer, 'model' | 'tuning'> & { resolved: PlacementAnswer['tuning'] };

const RANK: Record<Confidence, number> = { high: 2, medium: 1, low: 0 };
const lower = (a: Confidence, b: Confidence): Confidence => (RANK[a] <= RANK[b] ? a : b);
const MiB = 1024 * 1024;
const mib = (bytes: number) => `${Math.ceil(bytes / MiB)} MiB`;

/** The tuning the runtime loads with (models.ts): the same defaults, so the estimate describes that load. */
export function resolveTuning(t: PlacementTuning, contextLength: number | null) {
  const parallel = t.parallel || DEFAULT_PARALLEL;
  const contextSize = t.contextSize || Math.min(contextLength ?? DEFAULT_CONTEXT, DEFAULT_CONTEXT);
  // node-llama-cpp's default batch: the whole context, at most 512 tokens.
  const batchSize = t.batchSize || Math.min(contextSize * parallel, 512);
  return { contextSize, parallel, batchSize };
}

interface Shape {
  kvPerLayer: number;
  /** Working memory of the layers' graph (attention scores, activations): on the GPU once a layer is. */
  graphBytes: number;
  /** The logits buffer: always in host memory. */
  logitsBytes: number;
  guessed: string | null;
}

function shapeOf(model: PlacementModel, r: ReturnType<typeof resolveTuning>): Shape {
  const a = model.layout.attention;
  const embd = model.embeddingLength;
  const heads = a.headCount && a.headCount > 0 ? a.headCount : 1;
  const kvHeads = a.headCountKv && a.headCountKv > 0 ? a.headCountKv : heads;
  const keyLength = a.keyLength ?? embd / heads;
  const valueLength = a.valueLength ?? embd / heads;
  const cells = r.contextSize * r.parallel;
  const ubatch = Math.min(r.batchSize, MAX_UBATCH);
  const ff = model.layout.feedForwardLength ?? 4 * embd;
  const guesses = [a.guessed];
  if (KV_GUESSED.has(model.architecture))
    guesses.push(
      `\`${model.architecture}\` keeps its cache differently (sliding window, latent or recurrent state); full ` +
        `attention is assumed`,
    );
  return {
    kvPerLayer: Math.ceil(cells * (keyLength + valueLength) * kvHeads * KV_ELEMENT_BYTES),
    // Without flash attention the scores are f32 [cells, ubatch, heads]; activations a few rows of embd and ff.
    graphBytes: Math.ceil((cells * ubatch * heads + ubatch * (4 * embd + 2 * ff)) * 4),
    logitsBytes: (model.layout.vocabSize ?? 0) * ubatch * 4,
    guessed: guesses.filter((g) => g !== null).join('; ') || null,
  };
}

interface Split {
  gpuBytes: number;
  hostBytes: number;
}

/** The bytes on each side with the last `placed` layers offloaded (llama.cpp offloads from the end). */
function split(model: PlacementModel, shape: Shape, placed: number): Split {
  const layers = model.layout.layerBytes;
  const onGpu = Math.min(placed, layers.length);
  let gpuWeights = 0;
  for (let i = layers.length - onGpu; i < layers.length; i++) gpuWeights += layers[i]!;
  if (placed > layers.length) gpuWeights += model.layout.outputBytes;
  const weights = weightsOf(model.layout);
  const gpuKv = onGpu * shape.kvPerLayer;
  const kv = layers.length * shape.kvPerLayer;
  const gpuGraph = placed > 0 ? shape.graphBytes : 0;
  return {
    gpuBytes: gpuWeights + gpuKv + gpuGraph,
    hostBytes: weights - gpuWeights + (kv - gpuKv) + (shape.graphBytes - gpuGraph) + shape.logitsBytes,
  };
}

const weightsOf = (l: GgufLayout) => l.layerBytes.reduce((a, b) => a + b, 0) + l.outputBytes + l.otherBytes;

interface Budget {
  gpuFree: number | null;
  ramFree: number | null;
  /** The GPU's memory is the host's (Apple unified, integrated): both sides draw on RAM. */
  sharesRam: boolean;
}

function fitsIn(s: Split, b: Budget): boolean {
  const gpuOk = s.gpuBytes === 0 || (b.gpuFree !== null && s.gpuBytes <= b.gpuFree);
  const ramNeed = b.sharesRam ? s.hostBytes + s.gpuBytes : s.hostBytes;
  return gpuOk && (b.ramFree === null || ramNeed <= b.ramFree);
}

export function place(model: PlacementModel, tuning: PlacementTuning, hw: PlacementHardware): Placement {
  const reasons: string[] = [];
  let confidence: Confidence = 'high';
  const worse = (to: Confidence, reason: string) => {
    confidence = lower(confidence, to);
    reasons.push(reason);
  };
  const r = resolveTuning(tuning, model.contextLength);
  const shape = shapeOf(model, r);
  const total = model.layout.layerBytes.length + 1;
  if (model.layout.unknownTypes.length > 0)
    worse(
      'low',
      `tensor types of unknown size (${model.layout.unknownTypes.slice(0, 8).join(', ')}) are counted as 0 bytes`,
    );
  if (model.embeddingLength <= 0)
    worse('low', 'the header gives no embedding length: the cache and compute figures are guesses');
  if (shape.guessed) worse('medium', `the KV cache layout is a guess: ${shape.guessed}`);
  if (hw.partial) worse('low', 'the hardware probe failed: only the memory Node.js reports is known, no GPU');
  if (hw.ramAvailableBytes === null) worse('low', 'the host did not report its available memory');

  const wantsGpu = tuning.gpuLayers === 'auto' || tuning.gpuLayers > 0;
  const usable = hw.gpus.filter((g) => g.backend !== 'none');
  let budget: Budget = { gpuFree: null, ramFree: hw.ramAvailableBytes, sharesRam: false };
  if (usable.length > 0) {
    const sized = usable.filter((g) => g.memoryBytes !== null);
    const capacity = sized.reduce((a, g) => a + g.memoryBytes!, 0);
    budget = {
      ...budget,
      gpuFree: sized.length > 0 ? Math.max(0, capacity - GPU_RESERVE_BYTES * sized.length) : null,
      sharesRam: usable.some((g) => g.memoryKind !== 'discrete'),
    };
    if (wantsGpu) {
      for (const g of usable)
        if (g.confidence !== 'high') worse(g.confidence, `a GPU's memory figure has ${g.confidence} confidence`);
      if (sized.length < usable.length) worse('low', 'a GPU reported no memory size');
      if (usable.length > 1) worse('medium', `the layers are assumed to split evenly over ${usable.length} GPUs`);
      if (budget.sharesRam) reasons.push('the GPU shares the host memory: GPU and host bytes both come out of RAM');
    }
  }

  let placed: number;
  if (tuning.gpuLayers === 'auto') {
    placed = 0;
    if (budget.gpuFree !== null) {
      for (let n = total; n > 0; n--) {
        if (fitsIn(split(model, shape, n), budget)) {
          placed = n;
          break;
        }
      }
    }
    if (usable.length === 0) reasons.push('no GPU the runtime could use was found: every layer runs on the CPU');
    else if (budget.gpuFree === null) reasons.push('the GPU memory is unknown: no layer is placed on it');
    else if (placed < total)
      reasons.push(
        `${placed} of ${total} layers fit in the GPU's ${mib(budget.gpuFree)} (after a ${mib(GPU_RESERVE_BYTES)} ` +
          `reserve)`,
      );
  } else {
    placed = Math.min(Math.max(tuning.gpuLayers, 0), total);
    if (placed > 0 && usable.length === 0) {
      reasons.push('no GPU the runtime could use was found: the requested layers run on the CPU');
      placed = 0;
    } else if (tuning.gpuLayers > total)
      reasons.push(
        `the model has ${total} layers to offload (its blocks and the output layer), not ${tuning.gpuLayers}`,
      );
  }

  const s = split(model, shape, placed);
  const fits = fitsIn(s, budget);
  if (placed > 0 && budget.gpuFree !== null && s.gpuBytes > budget.gpuFree) {
    reasons.push(`the GPU needs ${mib(s.gpuBytes)}, ${mib(budget.gpuFree)} is usable`);
  }
  if (placed > 0 && budget.gpuFree === null && tuning.gpuLayers !== 'auto')
    worse('low', 'the GPU memory is unknown: whether the layers fit cannot be told');
  const ramNeed = budget.sharesRam && placed > 0 ? s.hostBytes + s.gpuBytes : s.hostBytes;
  if (budget.ramFree !== null && ramNeed > budget.ramFree)
    reasons.push(`the host needs ${mib(ramNeed)}, ${mib(budget.ramFree)} is available`);
  return {
    fits,
    gpuLayers: { requested: tuning.gpuLayers, placed, total },
    memory: {
      weightsBytes: weightsOf(model.layout),
      kvCacheBytes: shape.kvPerLayer * model.layout.layerBytes.length,
      computeBytes: shape.graphBytes + shape.logitsBytes,
      gpuBytes: s.gpuBytes,
      hostBytes: s.hostBytes,
    },
    available: { gpuFreeBytes: budget.gpuFree, ramFreeBytes: budget.ramFree },
    resolved: r,
    confidence,
    reasons,
  };
}
