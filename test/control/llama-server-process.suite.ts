import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { describe, test } from 'node:test';
import {
  createInstance,
  LaunchRefused,
  llamaServerArgs,
  TIMING,
  timingFromEnv,
} from '../../control/llama-server-process.ts';
import { isLlamaServerPath, locateLlamaServer, resolvedLlamaServer } from '../../control/llama-server-binary.ts';

const AUTO = { contextSize: 0, threads: 0, gpuLayers: 0, parallel: 0, batchSize: 0 };

describe('llama-server flags from runtime.tuning', () => {
  test('automatic (0) leaves a flag out, so llama-server picks', () => {
    assert.deepEqual(llamaServerArgs({ modelPath: '/m/a.gguf', port: 8081, tuning: AUTO }), [
      '--model',
      '/m/a.gguf',
      '--host',
      '127.0.0.1',
      '--port',
      '8081',
    ]);
  });

  test('every figure above 0 becomes its flag; gpuLayers -1 is CPU only', () => {
    const args = llamaServerArgs({
      modelPath: '/m/a.gguf',
      port: 1,
      tuning: { contextSize: 4096, threads: 8, gpuLayers: 33, parallel: 4, batchSize: 512 },
    });
    assert.deepEqual(args.slice(6), [
      '--ctx-size',
      '4096',
      '--threads',
      '8',
      '--n-gpu-layers',
      '33',
      '--parallel',
      '4',
      '--batch-size',
      '512',
    ]);
    assert.deepEqual(
      llamaServerArgs({ modelPath: '/m/a.gguf', port: 1, tuning: { ...AUTO, gpuLayers: -1 } }).slice(6),
      ['--n-gpu-layers', '0'],
    );
  });
});

describe('SWITCHYARD_SERVICE_TIMING', () => {
  test('absent: the documented defaults', () => {
    assert.deepEqual(timingFromEnv({}), TIMING);
    assert.equal(TIMING.backoffFirstMs, 500);
    assert.equal(TIMING.backoffMaxMs, 30_000);
  });

  test('overrides only the fields it names', () => {
    assert.deepEqual(timingFromEnv({ SWITCHYARD_SERVICE_TIMING: '{"backoffFirstMs":10,"stopGraceMs":20}' }), {
      ...TIMING,
      backoffFirstMs: 10,
      stopGraceMs: 20,
    });
  });

  test('anything else is refused with a message naming the field', () => {
    for (const raw of ['{', 'null', '[1]', '5'])
      assert.throws(() => timingFromEnv({ SWITCHYARD_SERVICE_TIMING: raw }), /JSON object/);
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

  test(
    'is judged by the file it resolves to: a link named llama-server to a shell is refused, a link to a ' +
      'llama-server is run as its target',
    async () => {
      const dir = mkdtempSync(join(tmpdir(), 'switchyard-llama-link-'));
      try {
        const shell = join(dir, 'sh-link', 'llama-server');
        mkdirSync(dirname(shell));
        symlinkSync('/bin/sh', shell);
        assert.equal(isLlamaServerPath(shell), true, 'the name alone passes');
        assert.equal(await resolvedLlamaServer(shell), null);
        assert.equal(await locateLlamaServer({ PATH: dirname(shell) }, null), null, 'nor is it taken from PATH');
        const real = join(dir, 'build', 'bin', 'llama-server');
        mkdirSync(dirname(real), { recursive: true });
        writeFileSync(real, '#!/bin/sh\n', { mode: 0o755 });
        const link = join(dir, 'brew', 'llama-server');
        mkdirSync(dirname(link));
        symlinkSync(real, link);
        assert.equal(await resolvedLlamaServer(link), realpathSync(real));
        assert.equal(await locateLlamaServer({ PATH: `${dirname(shell)}:${dirname(link)}` }, null), realpathSync(real));
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});

describe('an instance being started', () => {
  test('is starting from the call on, also while its binary is looked up, and failed when none is found', async () => {
    let refuse!: (err: Error) => void;
    const seen: string[] = [];
    const instance = createInstance({
      launchSpec: () => new Promise((_resolve, reject) => (refuse = reject)),
      timing: TIMING,
      env: {},
      onChange: (status, previous) => seen.push(`${previous}>${status.state}`),
    });
    const ready = instance.start();
    assert.equal(instance.status().state, 'starting');
    assert.deepEqual(seen, ['stopped>starting']);
    refuse(new LaunchRefused('binary_missing'));
    await assert.rejects(ready, /binary_missing/);
    assert.deepEqual(seen, ['stopped>starting', 'starting>failed']);
    assert.equal(instance.status().lastExit?.reason, 'binary_missing');
  });

  test('stopped while its binary is looked up: stopped, and no process is launched after', async () => {
    let give!: (spec: never) => void;
    const instance = createInstance({
      launchSpec: () => new Promise((resolve) => (give = resolve)),
      timing: TIMING,
      env: {},
      onChange: () => undefined,
    });
    const ready = instance.start();
    await instance.stop();
    assert.equal(instance.status().state, 'stopped');
    await assert.rejects(ready, /stopped before it became ready/);
    give({ binary: '/nonexistent/llama-server', modelPath: '/m', port: 1, tuning: AUTO } as never);
    await new Promise((r) => setImmediate(r));
    assert.deepEqual([instance.status().state, instance.status().pid], ['stopped', null]);
  });
});
