import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { readGgufHeader } from '../../../workers/runtime/gguf-header.ts';
import { listRuntimeModels, resolveModelPath } from '../../../workers/runtime/library.ts';
import { tinyModelBytes, writeCorruptModel, writeTinyModel, writeTruncatedModel, writeWrongShapeModel } from '../../helpers/gguf.ts';

const dir = mkdtempSync(join(tmpdir(), 'sy-gguf-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('readGgufHeader', () => {
  it('describes a healthy model without loading it', async () => {
    const info = await readGgufHeader(writeTinyModel(join(dir, 'ok.gguf'), { contextLength: 1024 }));
    assert.deepEqual(
      { ...info, sizeBytes: info.sizeBytes > 400_000 },
      { health: 'ok', problem: null, sizeBytes: true, version: 3, architecture: 'llama', displayName: 'switchyard-tiny', parameterCount: 115_520,
        fileType: 'F32', contextLength: 1024, embeddingLength: 64, blockCount: 2, hasChatTemplate: true },
    );
  });

  it('classifies broken files', async () => {
    const cases: [string, string][] = [
      [writeCorruptModel(join(dir, 'c.gguf')), 'corrupt'],
      [writeTruncatedModel(join(dir, 't.gguf')), 'partial'],
      [writeWrongShapeModel(join(dir, 'w.gguf')), 'corrupt'],
      [writeTinyModel(join(dir, 'u1.gguf'), { weightType: 99 }), 'unsupported'],
      [writeTinyModel(join(dir, 'u2.gguf'), { architecture: 'not-a-real-arch' }), 'unsupported'],
    ];
    writeFileSync(join(dir, 'magic.gguf'), Buffer.from('NOPE0000000000000000'));
    cases.push([join(dir, 'magic.gguf'), 'corrupt']);
    // Cut inside the metadata: the header itself is incomplete.
    writeFileSync(join(dir, 'head.gguf'), tinyModelBytes().subarray(0, 200));
    cases.push([join(dir, 'head.gguf'), 'partial']);
    for (const [path, health] of cases) {
      const info = await readGgufHeader(path);
      assert.equal(info.health, health, path);
      assert.equal(typeof info.problem, 'string');
    }
  });
});

describe('the model library', () => {
  it('lists GGUF files by relative name and refuses names outside the directory', async () => {
    const lib = mkdtempSync(join(dir, 'lib-'));
    writeTinyModel(join(lib, 'a.gguf'));
    writeFileSync(join(lib, 'notes.txt'), 'not a model');
    const views = await listRuntimeModels(lib);
    assert.deepEqual(views.map((v) => [v.name, v.health]), [['a.gguf', 'ok']]);
    assert.deepEqual(await listRuntimeModels(join(lib, 'missing')), []);
    assert.equal(resolveModelPath(lib, 'a.gguf'), join(lib, 'a.gguf'));
    for (const bad of ['../a.gguf', 'x/../a.gguf', '/a.gguf', '.hidden/a.gguf', 'a.bin', 'a\\b.gguf']) {
      assert.throws(() => resolveModelPath(lib, bad), { code: 'MODEL_NOT_FOUND' }, bad);
    }
  });
});
