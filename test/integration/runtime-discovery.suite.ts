import assert from 'node:assert/strict';
import { chmodSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { delimiter, join } from 'node:path';
import { after, before, test } from 'node:test';
import * as ollamaFake from '../fakes/ollama.ts';
import { tempHome } from '../helpers/service.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// GET /v1/runtime/discovery from the real service: an Ollama daemon at the address OLLAMA_HOST names, a
// llama-server on the PATH the service was started with (a script printing what llama.cpp's --version
// prints), and configured providers probed without their credentials.

const CREDENTIAL = `zz-discovery-credential-${process.pid}`;
let svc: InProcessService;
let ollama: ollamaFake.OllamaFake;
let binDir: string;
let closedPort: number;

/** A loopback port nothing listens on: taken, then let go. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

before(async () => {
  ollama = await ollamaFake.start();
  closedPort = await freePort();
  binDir = tempHome();
  const script = join(binDir, 'llama-server');
  writeFileSync(
    script,
    [
      '#!/bin/sh',
      'echo "load_backend: loaded CPU backend from $0" >&2',
      'echo "version: 0.4.1-dev (build 10991, commit 930e2fa59)" >&2',
      'echo "built with cc (GCC) 13.2.0 for x86_64-linux-gnu" >&2',
      '',
    ].join('\n'),
  );
  chmodSync(script, 0o755);
  svc = await startInProcess({
    env: {
      OLLAMA_HOST: new URL(ollama.baseUrl).host,
      SWITCHYARD_DISCOVERY_OLLAMA_URL: '',
      PATH: `${binDir}${delimiter}${process.env.PATH ?? ''}`,
    },
  });
  for (const body of [
    { id: 'gone-llama', kind: 'llamacpp', baseUrl: `http://127.0.0.1:${closedPort}` },
    { id: 'local-ollama', kind: 'ollama', baseUrl: ollama.baseUrl, credential: CREDENTIAL },
  ]) {
    const created = await svc.request('POST', '/v1/providers', { body });
    assert.equal(created.status, 201, created.text);
  }
});

after(async () => {
  await svc?.stop();
  await ollama?.close();
});

test(
  'discovery finds Ollama, llama-server on PATH and the configured providers, without paths or ' + 'credentials',
  async () => {
    const reply = await svc.request('GET', '/v1/runtime/discovery?refresh=true');
    assert.equal(reply.status, 200, reply.text);
    const { data } = reply.json as { data: Record<string, unknown>[] };

    const daemon = data.find((r) => r.source === 'default_address');
    assert.deepEqual(daemon, {
      kind: 'ollama',
      source: 'default_address',
      url: ollama.baseUrl.replace(/\/+$/, ''),
      version: '0.12.0',
      state: 'reachable',
      reason: null,
    });

    const onPath = data.filter((r) => r.source === 'path');
    assert.deepEqual(onPath, [
      {
        kind: 'llamacpp',
        source: 'path',
        version: '0.4.1-dev',
        build: 10991,
        state: 'found',
        binary: 'llama-server',
        onPath: true,
      },
    ]);

    const gone = data.find((r) => r.providerId === 'gone-llama');
    assert.deepEqual(gone, {
      kind: 'llamacpp',
      source: 'provider',
      providerId: 'gone-llama',
      url: `http://127.0.0.1:${closedPort}`,
      version: null,
      state: 'unreachable',
      reason: 'connection refused',
    });
    const local = data.find((r) => r.providerId === 'local-ollama');
    assert.equal(local?.state, 'reachable');
    assert.equal(local?.version, '0.12.0');

    // The probes carried no credential, and the answer names no directory.
    const probes = ollama.requests.filter((r) => r.path === '/api/version');
    assert.ok(probes.length >= 2);
    for (const r of probes) assert.equal(r.headers['authorization'], undefined);
    assert.ok(!reply.text.includes(binDir));
    assert.ok(!reply.text.includes(CREDENTIAL));
    assert.ok(!svc.log().includes(CREDENTIAL));
  },
);

test('a poll inside the cache time is answered from the cache', async () => {
  const first = await svc.request('GET', '/v1/runtime/discovery?refresh=true');
  const probes = ollama.requests.length;
  const second = await svc.request('GET', '/v1/runtime/discovery');
  assert.equal(second.status, 200);
  assert.equal(second.json.probedAt, first.json.probedAt);
  assert.equal(ollama.requests.length, probes);
});

test('bad queries answer 400 naming the parameter', async () => {
  for (const [query, param] of [
    ['refresh=yes', 'refresh'],
    ['refresh=', 'refresh'],
    ['refresh=true&refresh=false', 'refresh'],
    ['path=/usr/bin', 'path'],
  ] as const) {
    const reply = await svc.request('GET', `/v1/runtime/discovery?${query}`);
    assert.equal(reply.status, 400, query);
    assert.equal(reply.json.error.code, 'INVALID_REQUEST');
    assert.equal(reply.json.error.param, param);
  }
});
