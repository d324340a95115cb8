import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { llamaServerArgs, TIMING, timingFromEnv } from '../../../edge/control/llama-server-process.ts';
import { isLlamaServerPath } from '../../../edge/control/llama-server-binary.ts';

const AUTO = { contextSize: 0, threads: 0, gpuLayers: 0, parallel: 0, batchSize: 0 };

describe('llama-server flags from runtime.tuning', () => {
  test('automatic (0) leaves a flag out, so llama-server picks', () => {
    assert.deepEqual(llamaServerArgs({ modelPath: '/m/a.gguf', port: 8081, tuning: AUTO }), ['--model', '/m/a.gguf', '--host', '127.0.0.1', '--port', '8081']);
  });

  test('every figure above 0 becomes its flag; gpuLayers -1 is CPU only', () => {
    const args = llamaServerArgs({ modelPath: '/m/a.gguf', port: 1, tuning: { contextSize: 4096, threads: 8, gpuLayers: 33, parallel: 4, batchSize: 512 } });
    assert.deepEqual(args.slice(6), ['--ctx-size', '4096', '--threads', '8', '--n-gpu-layers', '33', '--parallel', '4', '--batch-size', '512']);
    assert.deepEqual(llamaServerArgs({ modelPath: '/m/a.gguf', port: 1, tuning: { ...AUTO, gpuLayers: -1 } }).slice(6), ['--n-gpu-layers', '0']);
  });
});

describe('SWITCHYARD_SERVICE_TIMING', () => {
  test('absent: the documented defaults', () => {
    assert.deepEqual(timingFromEnv({}), TIMING);
    assert.equal(TIMING.backoffFirstMs, 500);
    assert.equal(TIMING.backoffMaxMs, 30_000);
  });

  test('overrides only the fields it names', () => {
    assert.deepEqual(timingFromEnv({ SWITCHYARD_SERVICE_TIMING: '{"backoffFirstMs":10,"stopGraceMs":20}' }), { ...TIMING, backoffFirstMs: 10, stopGraceMs: 20 });
  });

  test('anything else is refused with a message naming the field', () => {
    for (const raw of ['{', 'null', '[1]', '5']) assert.throws(() => timingFromEnv({ SWITCHYARD_SERVICE_TIMING: raw }), /JSON object/);
    assert.throws(() => timingFromEnv({ SWITCHYARD_SERVICE_TIMING: '{"nope":1}' }), /`nope`/);
    assert.throws(() => timingFromEnv({ SWITCHYARD_SERVICE_TIMING: '{"backoffFirstMs":0}' }), /`backoffFirstMs`/);
    assert.throws(() => timingFromEnv({ SWITCHYARD_SERVICE_TIMING: '{"backoffFirstMs":1.5}' }), /`backoffFirstMs`/);
  });
});

describe('a configured binary', () => {
  test('must be an absolute path to a file named llama-server', () => {
    assert.equal(isLlamaServerPath('/opt/llama/llama-server'), true);
    assert.equal(isLlamaServerPath('C:/llama/llama-server.exe'.replace('C:', '')), true);
    assert.equal(isLlamaServerPath('llama-server'), false);
    assert.equal(isLlamaServerPath('/bin/sh'), false);
    assert.equal(isLlamaServerPath('/opt/llama-server/run'), false);
  });
});
