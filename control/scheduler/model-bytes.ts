import { stat } from 'node:fs/promises';
import type { Tuning } from '../../protocol/http/settings.ts';
import { readGgufHeader } from '../../workers/runtime/gguf-header.ts';
import { place } from '../../workers/runtime/placement.ts';

// What a GGUF file holds once loaded, for the scheduler's budget: the weights, the KV cache and the compute
// buffers, by the same arithmetic as POST /v1/runtime/placement, GPU and host together (where the layers go
// does not change the sum by much). Read from the header once per file version and tuning, never per call.

const CACHE_MAX = 256;

export interface ModelBytes {
  /** The estimate for the file at `path`; its size when the header cannot be read (the load will then fail). */
  of(path: string, tuning: Tuning): Promise<number>;
}

export function createModelBytes(): ModelBytes {
  const cache = new Map<string, number>();
  return {
    async of(path, tuning) {
      const facts = await stat(path);
      const shape = `${tuning.contextSize}:${tuning.parallel}:${tuning.batchSize}`;
      const key = `${path}\0${facts.size}\0${facts.mtimeMs}\0${shape}`;
      const known = cache.get(key);
      if (known !== undefined) return known;
      const bytes = await estimate(path, tuning, facts.size);
      if (cache.size >= CACHE_MAX) cache.delete(cache.keys().next().value!);
      cache.set(key, bytes);
      return bytes;
    },
  };
}

async function estimate(path: string, tuning: Tuning, sizeBytes: number): Promise<number> {
  const header = await readGgufHeader(path).catch(() => null);
  if (header === null || header.health !== 'ok' || header.layout === null || header.architecture === null)
    return sizeBytes;
  const p = place(
    {
      architecture: header.architecture,
      embeddingLength: header.embeddingLength ?? 0,
      contextLength: header.contextLength,
      layout: header.layout,
    },
    { contextSize: tuning.contextSize, parallel: tuning.parallel, batchSize: tuning.batchSize, gpuLayers: -1 },
    { ramAvailableBytes: null, gpus: [], partial: false },
  );
  return Math.max(sizeBytes, p.memory.gpuBytes + p.memory.hostBytes);
}
