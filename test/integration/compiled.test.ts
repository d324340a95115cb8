import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { writeTinyModel } from '../helpers/gguf.ts';
import { startService, tempHome, type TestService } from '../helpers/service.ts';

// `npm start` runs the compiled build of bin/build.js, not the source through tsx. The build goes to a temp
// folder, never a developer's dist/; compiling takes ~4 s on 2 cores, twice in this file. Which modules each
// thread loads is read from Node's own ESM loader trace (NODE_DEBUG=esm on stderr) of a second service; the
// test also checks that the trace names the compiled worker modules, so a change in its format fails here
// instead of passing. The trace is inherited by the model probe's child process and overflows the output
// the probe accepts, so the traced service cannot serve a model: the untraced one does.

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BUILD = join(ROOT, 'bin', 'build.js');

let work: string;
let out: string;
let outUrl: string;
let svc: TestService;
let traced: TestService;

const build = (...args: string[]) =>
  execFileSync(process.execPath, [BUILD, '--out-dir', out, ...args], { encoding: 'utf8', stdio: 'pipe' });
const run = (...args: string[]) =>
  spawnSync(process.execPath, [join(out, 'bin', 'switchyard.js'), ...args], {
    env: { ...process.env, SWITCHYARD_HOME: tempHome() },
    encoding: 'utf8',
  });
/** Every module URL the traced service's threads loaded so far. */
const loadedModules = () => [...traced.stderr().matchAll(/^ESM \d+: Storing (file:\/\/\S+)/gm)].map((m) => m[1]!);
const withModel = () => {
  const home = tempHome();
  mkdirSync(join(home, 'models'));
  writeTinyModel(join(home, 'models', 'tiny.gguf'));
  return home;
};

before(async () => {
  work = realpathSync(mkdtempSync(join(tmpdir(), 'switchyard-build-')));
  out = join(work, 'dist');
  outUrl = pathToFileURL(out).href + '/';
  build();
  const bin = join(out, 'bin', 'switchyard.js');
  [svc, traced] = await Promise.all([
    startService({ home: withModel(), bin }),
    startService({ home: withModel(), bin, env: { NODE_DEBUG: 'esm' } }),
  ]);
});
after(async () => {
  await Promise.all([svc?.stop(), traced?.stop()]);
  rmSync(work, { recursive: true, force: true });
});

describe('the compiled build', () => {
  test('holds JavaScript only, with the entry shims and the probe child beside the modules they load', () => {
    for (const file of [
      'service/main.js',
      'workers/proxy/relay-entry.js',
      'workers/proxy/relay-worker.js',
      'workers/runtime/probe-child.js',
      'package.json',
    ]) {
      assert.ok(existsSync(join(out, file)), file);
    }
    assert.equal(existsSync(join(out, 'service/main.ts')), false);
    assert.equal(existsSync(join(out, 'test')), false);
    assert.equal(JSON.parse(readFileSync(join(out, 'package.json'), 'utf8')).type, 'module');
  });

  test('answers /health without a token and /v1/models with one', async () => {
    assert.equal((await svc.request('GET', '/health', { token: null })).status, 200);
    const models = await svc.request('GET', '/v1/models');
    assert.equal(models.status, 200, models.text);
    assert.ok(
      models.json.data.some((m: { id: string }) => m.id === 'embedded/tiny.gguf'),
      models.text,
    );
    assert.equal((await svc.request('GET', '/v1/models', { token: null })).status, 401);
  });

  test('serves the dashboard: its page, its modules and the libraries it imports', async () => {
    for (const path of ['/', '/dashboard/app.js', '/dashboard/preact.js', '/dashboard/uplot.css']) {
      const reply = await svc.request('GET', path, { token: null });
      assert.equal(reply.status, 200, `${path}: ${reply.text.slice(0, 200)}`);
      assert.ok(reply.text.length > 100, path);
    }
  });

  test('serves a GGUF model through the embedded runtime', async () => {
    const library = await svc.request('GET', '/v1/runtime/models');
    assert.equal(library.status, 200, library.text);
    assert.deepEqual(
      library.json.data.map((m: { name: string; health: string }) => [m.name, m.health]),
      [['tiny.gguf', 'ok']],
    );
    const reply = await svc.request('POST', '/v1/chat/completions', {
      body: { model: 'embedded/tiny.gguf', max_tokens: 4, messages: [{ role: 'user', content: 'Hi' }] },
    });
    assert.equal(reply.status, 200, reply.text);
    assert.equal(reply.json.choices[0].finish_reason, 'length');
    assert.equal(reply.json.usage.completion_tokens, 4);
  });

  test('no thread loads tsx or a .ts file: every own module comes from the build', async () => {
    // Starts the runtime worker (its model probe fails under the trace, see above).
    await traced.request('POST', '/v1/chat/completions', {
      body: { model: 'embedded/tiny.gguf', max_tokens: 1, messages: [{ role: 'user', content: 'Hi' }] },
    });
    // The model-list pool starts its thread on demand: a new provider's models are listed there.
    const created = await traced.request('POST', '/v1/providers', {
      body: { kind: 'openai_compatible', id: 'nowhere', baseUrl: 'http://127.0.0.1:9/v1' },
    });
    assert.equal(created.status, 201, created.text);
    await traced.waitForStderr(/^ESM \d+: Storing file:\/\/\S+\/workers\/proxy\/worker\.js /m, 15_000);
    const loaded = loadedModules();
    for (const file of [
      'service/main.js',
      'workers/proxy/relay-worker.js',
      'workers/proxy/worker.js',
      'workers/meter/worker.js',
      'workers/runtime/runtime-worker.js',
    ]) {
      assert.ok(loaded.includes(outUrl + file), `${file} was not loaded from the build`);
    }
    assert.deepEqual(
      loaded.filter((url) => /\/node_modules\/(tsx|esbuild)\//.test(url)),
      [],
    );
    assert.deepEqual(
      loaded.filter((url) => !url.startsWith(outUrl) && !url.includes('/node_modules/')),
      [],
    );
  });

  test('refuses to start once its source differs; --if-stale rebuilds it then, and only then', () => {
    const stampFile = join(out, 'build-stamp.json');
    const stamp = JSON.parse(readFileSync(stampFile, 'utf8')) as { source: string; hash: string };
    // A marker the compiler does not write: it survives only as long as this folder is not replaced.
    writeFileSync(join(out, 'marker'), '');
    // As if a source file had been edited since the build.
    writeFileSync(stampFile, JSON.stringify({ ...stamp, hash: '0'.repeat(64) }));
    const stale = run('--version');
    assert.equal(stale.status, 1);
    assert.equal(stale.stdout, '');
    assert.match(stale.stderr, /was built from other source than .* holds now: run `npm run build`/);

    build('--if-stale');
    assert.equal(existsSync(join(out, 'marker')), false, 'the stale build was kept');
    const rebuilt = run('--version');
    assert.equal(rebuilt.status, 0, rebuilt.stderr);
    assert.equal(rebuilt.stdout.trim(), JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).version);

    writeFileSync(join(out, 'marker'), '');
    build('--if-stale');
    assert.ok(existsSync(join(out, 'marker')), 'an up-to-date build was rebuilt');
  });
});
