import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cleanReason } from '../../../workers/runtime/probe.ts';

// llama.cpp's refusal reasons reach responses and the library listing: never with a path.

describe('cleanReason', () => {
  it('keeps what llama.cpp found and drops its function prefix', () => {
    assert.equal(
      cleanReason("llama_model_load: error loading model: missing tensor 'output_norm.weight'", '/m/x.gguf'),
      "error loading model: missing tensor 'output_norm.weight'",
    );
  });

  it("replaces the file's path and any other absolute path", () => {
    const path = '/home/someone/.local/share/switchyard/models/secret name.gguf';
    const out = cleanReason(
      `gguf_init_from_file: failed to open GGUF file '${path}' (also tried /tmp/other.bin and C:\\models\\x.gguf)`,
      path,
    );
    assert.equal(out, "failed to open GGUF file 'the file' (also tried <path> and <path>)");
    assert.equal(out.includes('someone'), false);
  });

  it('removes control characters and bounds the length', () => {
    const out = cleanReason(`bad\u0000value\n${'x'.repeat(1000)}`, '/p');
    assert.equal(/[\u0000-\u001f]/.test(out), false);
    assert.ok(out.length <= 300);
  });
});
