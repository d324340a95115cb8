import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { GgufLayout } from '../../../workers/runtime/gguf-header.ts';
import {
  GPU_RESERVE_BYTES,
  place,
  resolveTuning,
  type PlacementHardware,
  type PlacementModel,
  type PlacementTuning,
} from '../../../workers/runtime/placement.ts';

const GiB = 1024 ** 3;
const _MiB = 1024 ** 2;

// A hand-built model: 4 blocks of 1 GiB, a 0.5 GiB output layer, a 0.5 GiB token embedding (5 GiB of weights);
// grouped-query attention with 8 heads, 2 KV heads of 128; vocabulary 32000.
const layout: GgufLayout = {
  layerBytes: [GiB, GiB, GiB, GiB],
  outputBytes: GiB / 2,
  otherBytes: GiB / 2,
  unknownTypes: [],
  vocabSize: 32_000,
  feedForwardLength: 4096,
  attention: { headCount: 8, headCountKv: 2, keyLength: 128, valueLength: 128, guessed: null },
};
const model: PlacementModel = { architecture: 'llama', embeddingLength: 1024, contextLength: 8192, layout };
const tuning = (gpuLayers: PlacementTuning['gpuLayers']): PlacementTuning => ({
  contextSize: 1024,
  parallel: 1,
  batchSize: 256,
  gpuLayers,
});

// With that tuning: 1024 cells of f16 K and V, 2 heads of 128 each, per layer.
const KV_PER_LAYER = 1024 * (128 + 128) * 2 * 2;
// f32 attention scores [cells, ubatch, heads] plus activation rows of 4 embd and 2 feed-forward widths.
const GRAPH = (1024 * 256 * 8 + 256 * (4 * 1024 + 2 * 4096)) * 4;
const LOGITS = 32_000 * 256 * 4;

const gpu = (
  memoryBytes: number | null,
  extra: Partial<PlacementHardware['gpus'][number]> = {},
): PlacementHardware['gpus'][number] => ({
  backend: 'cuda',
  memoryKind: 'discrete',
  memoryBytes,
  confidence: 'high',
  ...extra,
});
const hw = (ram: number | null, gpus: PlacementHardware['gpus'], partial = false): PlacementHardware => ({
  ramAvailableBytes: ram,
  gpus,
  partial,
});

describe('placement', () => {
  it('puts every layer on a GPU with room for them', () => {
    const p = place(model, tuning('auto'), hw(16 * GiB, [gpu(8 * GiB)]));
    assert.deepEqual(p.gpuLayers, { requested: 'auto', placed: 5, total: 5 });
    assert.deepEqual(p.memory, {
      weightsBytes: 5 * GiB,
      kvCacheBytes: 4 * KV_PER_LAYER,
      computeBytes: GRAPH + LOGITS,
      gpuBytes: 4.5 * GiB + 4 * KV_PER_LAYER + GRAPH,
      hostBytes: 0.5 * GiB + LOGITS,
    });
    assert.deepEqual(p.available, { gpuFreeBytes: 8 * GiB - GPU_RESERVE_BYTES, ramFreeBytes: 16 * GiB });
    assert.equal(p.fits, true);
    assert.equal(p.confidence, 'high');
    assert.deepEqual(p.reasons, []);
  });

  it('offloads the last layers that fit when the GPU is small', () => {
    // 2.25 GiB usable: two blocks (2 GiB) with their cache and the graph fit, three do not.
    const p = place(model, tuning('auto'), hw(16 * GiB, [gpu(2.5 * GiB)]));
    assert.deepEqual(p.gpuLayers, { requested: 'auto', placed: 2, total: 5 });
    assert.equal(p.memory.gpuBytes, 2 * GiB + 2 * KV_PER_LAYER + GRAPH);
    assert.equal(p.memory.hostBytes, 3 * GiB + 2 * KV_PER_LAYER + LOGITS);
    assert.equal(p.fits, true);
    assert.match(p.reasons.join('\n'), /2 of 5 layers fit/);
  });

  it('says a requested split does not fit, and why', () => {
    const p = place(model, tuning(4), hw(16 * GiB, [gpu(2.5 * GiB)]));
    assert.equal(p.gpuLayers.placed, 4);
    assert.equal(p.memory.gpuBytes, 4 * GiB + 4 * KV_PER_LAYER + GRAPH);
    assert.equal(p.fits, false);
    assert.match(p.reasons.join('\n'), /the GPU needs 4[0-9]{3} MiB, 2304 MiB is usable/);
  });

  it('runs on the CPU without a GPU, and does not fit in too little RAM', () => {
    const p = place(model, tuning(3), hw(4 * GiB, []));
    assert.deepEqual(p.gpuLayers, { requested: 3, placed: 0, total: 5 });
    assert.equal(p.memory.gpuBytes, 0);
    assert.equal(p.memory.hostBytes, 5 * GiB + 4 * KV_PER_LAYER + GRAPH + LOGITS);
    assert.equal(p.available.gpuFreeBytes, null);
    assert.equal(p.fits, false);
    assert.match(p.reasons.join('\n'), /no GPU the runtime could use/);
    assert.match(p.reasons.join('\n'), /the host needs 5[0-9]{3} MiB, 4096 MiB is available/);
    assert.equal(place(model, tuning(0), hw(8 * GiB, [])).fits, true);
  });

  it('counts a GPU sharing the host memory against RAM too', () => {
    const unified = [gpu(3 * GiB, { backend: 'metal', memoryKind: 'unified', confidence: 'medium' })];
    const p = place(model, tuning('auto'), hw(5.5 * GiB, unified));
    assert.equal(p.gpuLayers.placed, 2);
    assert.equal(p.fits, true);
    assert.equal(p.confidence, 'medium');
    // Two layers on a discrete GPU leave 3 GiB of weights to a 5 GiB host; on a unified one all 5 GiB count.
    assert.equal(place(model, tuning(2), hw(5 * GiB, [gpu(3 * GiB)])).fits, true);
    const shared = place(model, tuning(2), hw(5 * GiB, unified));
    assert.equal(shared.fits, false);
    assert.match(shared.reasons.join('\n'), /shares the host memory/);
  });

  it('lowers its confidence for guesses and missing figures', () => {
    assert.equal(place({ ...model, architecture: 'gemma2' }, tuning(0), hw(16 * GiB, [])).confidence, 'medium');
    assert.equal(
      place({ ...model, layout: { ...layout, unknownTypes: ['type 99'] } }, tuning(0), hw(16 * GiB, [])).confidence,
      'low',
    );
    assert.equal(place(model, tuning(0), hw(16 * GiB, [], true)).confidence, 'low');
    assert.equal(place(model, tuning(0), hw(null, [])).confidence, 'low');
    const unsized = place(model, tuning(2), hw(16 * GiB, [gpu(null, { confidence: 'low' })]));
    assert.equal(unsized.confidence, 'low');
    assert.equal(unsized.fits, false);
    assert.equal(place(model, tuning('auto'), hw(16 * GiB, [gpu(null)])).gpuLayers.placed, 0);
    // A CPU-only request does not depend on the GPU's figures.
    assert.equal(place(model, tuning(0), hw(16 * GiB, [gpu(null, { confidence: 'low' })])).confidence, 'high');
  });

  it('explains a request for more layers than the model has', () => {
    const p = place(model, tuning(99), hw(16 * GiB, [gpu(24 * GiB)]));
    assert.equal(p.gpuLayers.placed, 5);
    assert.match(p.reasons.join('\n'), /has 5 layers to offload/);
  });

  it('resolves automatic tuning as the runtime does', () => {
    assert.deepEqual(resolveTuning({ contextSize: 0, parallel: 0, batchSize: 0, gpuLayers: 0 }, 2048), {
      contextSize: 2048,
      parallel: 4,
      batchSize: 512,
    });
    assert.deepEqual(resolveTuning({ contextSize: 0, parallel: 0, batchSize: 0, gpuLayers: 0 }, 32_768), {
      contextSize: 4096,
      parallel: 4,
      batchSize: 512,
    });
    assert.deepEqual(resolveTuning({ contextSize: 64, parallel: 2, batchSize: 0, gpuLayers: 0 }, null), {
      contextSize: 64,
      parallel: 2,
      batchSize: 128,
    });
  });
});
