import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { readGgufHeader } from '../../../workers/runtime/gguf-header.ts';
import { listRuntimeModels, resolveModelPath } from '../../../workers/runtime/library.ts';
import { prng } from '../../helpers/prng.ts';
import {
  tinyModelBytes,
  writeCorruptModel,
  writeTinyModel,
  writeTruncatedModel,
  writeWrongShapeModel,
} from '../../helpers/gguf.ts';

const dir = mkdtempSync(join(tmpdir(), 'sy-gguf-'));
after(() => rmSync(dir, { recursive: true, force: true }));

describe('readGgufHeader', () => {
  it('describes a healthy model without loading it', async () => {
    const { layout, ...info } = await readGgufHeader(writeTinyModel(join(dir, 'ok.gguf'), { contextLength: 1024 }));
    assert.notEqual(layout, null);
    assert.deepEqual(
      { ...info, sizeBytes: info.sizeBytes > 400_000 },
      {
        health: 'ok',
        problem: null,
        sizeBytes: true,
        version: 3,
        architecture: 'llama',
        displayName: 'switchyard-tiny',
        parameterCount: 115_520,
        fileType: 'F32',
        contextLength: 1024,
        embeddingLength: 64,
        blockCount: 2,
        hasChatTemplate: true,
      },
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

describe('the tensor table', () => {
  // The tiny model: embd 64, feed-forward 128, vocabulary 260, 4 heads, F32 or F16 weights, norms always F32.
  const layerBytes = (w: number) => 2 * 64 * 4 + (4 * 64 * 64 + 3 * 64 * 128) * w;

  it('sums weight bytes per block, for the output layer and for the rest', async () => {
    for (const [weightType, w] of [
      [0, 4],
      [1, 2],
    ] as const) {
      const info = await readGgufHeader(
        writeTinyModel(join(dir, `layout-${weightType}.gguf`), { layers: 3, weightType }),
      );
      assert.equal(info.health, 'ok');
      assert.deepEqual(info.layout, {
        layerBytes: [layerBytes(w), layerBytes(w), layerBytes(w)],
        outputBytes: 64 * 4 + 64 * 260 * w,
        otherBytes: 64 * 260 * w,
        unknownTypes: [],
        vocabSize: 260,
        feedForwardLength: 128,
        attention: { headCount: 4, headCountKv: 4, keyLength: null, valueLength: null, guessed: null },
      });
    }
  });

  it('calls a table no real file has corrupt, and one cut short partial', async () => {
    const long = 'blk.0.' + 'x'.repeat(60);
    const cases: [string, Buffer, string, RegExp][] = [
      [
        'block index',
        tinyModelBytes({ renameTensors: { 'blk.1.attn_q.weight': 'blk.99999.attn_q.weight' } }),
        'corrupt',
        /block beyond/,
      ],
      [
        'name length',
        tinyModelBytes({ renameTensors: { 'blk.1.attn_q.weight': long } }),
        'corrupt',
        /name length of 66/,
      ],
      ['tensor count', withU64(tinyModelBytes(), 8, 200_000n), 'corrupt', /tensor count of 200000/],
      [
        'dimensions',
        patchAfter(tinyModelBytes(), 'token_embd.weight', (b, at) => b.writeUInt32LE(9, at)),
        'corrupt',
        /9 dimensions/,
      ],
      [
        'elements',
        patchAfter(tinyModelBytes(), 'token_embd.weight', (b, at) => b.writeBigUInt64LE(1n << 50n, at + 4)),
        'corrupt',
        /more elements/,
      ],
      ['cut', cutAt(tinyModelBytes(), 'blk.1.ffn_up.weight'), 'partial', /past the end/],
    ];
    for (const [label, bytes, health, problem] of cases) {
      writeFileSync(join(dir, 'table.gguf'), bytes);
      const info = await readGgufHeader(join(dir, 'table.gguf'));
      assert.equal(info.health, health, label);
      assert.match(info.problem ?? '', problem, label);
      assert.equal(info.layout, null, label);
    }
  });

  it('never throws for random damage to the table', async () => {
    const whole = tinyModelBytes();
    const start = whole.indexOf('token_embd.weight') - 8;
    const end = whole.indexOf('blk.1.ffn_up.weight') + 40;
    const next = prng(23);
    const seen = new Set<string>();
    for (let i = 0; i < 150; i++) {
      const bytes = Buffer.from(whole);
      for (let k = 0; k < 4; k++) bytes[start + Math.floor(next() * (end - start))] = Math.floor(next() * 256);
      writeFileSync(join(dir, 'fuzz.gguf'), bytes);
      const info = await readGgufHeader(join(dir, 'fuzz.gguf'));
      seen.add(info.health);
      if (info.health !== 'ok') assert.equal(typeof info.problem, 'string');
    }
    // The damage reached the checks: not every file came through healthy.
    assert.ok(seen.size > 1, [...seen].join());
  });
});

function withU64(bytes: Buffer, at: number, value: bigint): Buffer {
  bytes.writeBigUInt64LE(value, at);
  return bytes;
}

/** Patches the bytes right after tensor `name` in the table (its dimension count, then its dimensions). */
function patchAfter(bytes: Buffer, name: string, patch: (b: Buffer, at: number) => void): Buffer {
  patch(bytes, bytes.indexOf(name) + name.length);
  return bytes;
}

function cutAt(bytes: Buffer, name: string): Buffer {
  return bytes.subarray(0, bytes.indexOf(name));
}

describe('the model library', () => {
  it('lists GGUF files by relative name and refuses names outside the directory', async () => {
    const lib = mkdtempSync(join(dir, 'lib-'));
    writeTinyModel(join(lib, 'a.gguf'));
    writeFileSync(join(lib, 'notes.txt'), 'not a model');
    const views = await listRuntimeModels(lib);
    assert.deepEqual(
      views.map((v) => [v.name, v.health]),
      [['a.gguf', 'ok']],
    );
    assert.deepEqual(await listRuntimeModels(join(lib, 'missing')), []);
    assert.equal(resolveModelPath(lib, 'a.gguf'), join(lib, 'a.gguf'));
    for (const bad of ['../a.gguf', 'x/../a.gguf', '/a.gguf', '.hidden/a.gguf', 'a.bin', 'a\\b.gguf']) {
      assert.throws(() => resolveModelPath(lib, bad), { code: 'MODEL_NOT_FOUND' }, bad);
    }
  });
});
