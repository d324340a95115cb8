import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { test } from 'node:test';
import {
  boundedVersion,
  createRuntimeDiscovery,
  ollamaAddress,
  parseLlamaServerVersion,
  parseOllamaVersion,
  redactUrl,
} from '../../control/runtime-discovery.ts';

test('llama-server --version: the numbered-release form gives the version and the build', () => {
  const out = [
    'load_backend: loaded CPU backend from /opt/llama/libggml-cpu.so',
    'version: 0.4.1-dev (build 10991, commit 930e2fa59)',
    'built with AppleClang 21.0.0.21000334 for Darwin arm64',
  ].join('\n');
  assert.deepEqual(parseLlamaServerVersion(out), { version: '0.4.1-dev', build: 10991 });
});

test('llama-server --version: the older build-number form gives the release tag', () => {
  assert.deepEqual(
    parseLlamaServerVersion('version: 4521 (a6744e43)\r\nbuilt with cc 11.4.0 for x86_64-linux-gnu\r\n'),
    { version: 'b4521', build: 4521 },
  );
});

test('llama-server --version: output without a version line, or with a junk one, gives nulls', () => {
  assert.deepEqual(parseLlamaServerVersion('usage: llama-server [options]'), { version: null, build: null });
  assert.deepEqual(parseLlamaServerVersion(''), { version: null, build: null });
  assert.deepEqual(parseLlamaServerVersion(`version: ${'x'.repeat(200)}`), { version: null, build: null });
  assert.deepEqual(parseLlamaServerVersion('version: <script>'), { version: null, build: null });
});

test('Ollama /api/version: the version field when it is a short token, else null', () => {
  assert.equal(parseOllamaVersion('{"version":"0.12.0"}'), '0.12.0');
  assert.equal(parseOllamaVersion('{"version":"0.12.0 Bearer sk-secret"}'), null);
  assert.equal(parseOllamaVersion('{"version":12}'), null);
  assert.equal(parseOllamaVersion('null'), null);
  assert.equal(parseOllamaVersion('Ollama is running'), null);
  assert.equal(boundedVersion('1'.repeat(65)), null);
});

test('URL redaction keeps scheme, host, port and path, and drops userinfo, query and fragment', () => {
  assert.equal(redactUrl('http://user:pa55@127.0.0.1:8080/v1/?key=sk-secret#frag'), 'http://127.0.0.1:8080/v1');
  assert.equal(redactUrl('https://[::1]:11434'), 'https://[::1]:11434');
  assert.equal(redactUrl('file:///etc/passwd'), null);
  assert.equal(redactUrl('not a url'), null);
});

test('OLLAMA_HOST is read as Ollama reads it, and the test override wins', () => {
  assert.equal(ollamaAddress({}), 'http://127.0.0.1:11434');
  assert.equal(ollamaAddress({ OLLAMA_HOST: '0.0.0.0' }), 'http://127.0.0.1:11434');
  assert.equal(ollamaAddress({ OLLAMA_HOST: '"box.lan:9999"' }), 'http://box.lan:9999');
  assert.equal(ollamaAddress({ OLLAMA_HOST: 'https://box.lan' }), 'https://box.lan:443');
  assert.equal(ollamaAddress({ OLLAMA_HOST: 'http://box.lan/ollama' }), 'http://box.lan:80/ollama');
  assert.equal(ollamaAddress({ OLLAMA_HOST: '::1' }), 'http://[::1]:11434');
  assert.equal(ollamaAddress({ OLLAMA_HOST: '[::]:7000' }), 'http://[::1]:7000');
  assert.equal(ollamaAddress({ OLLAMA_HOST: 'box:99999' }), 'http://box:11434');
  assert.equal(
    ollamaAddress({ OLLAMA_HOST: 'a:1', SWITCHYARD_DISCOVERY_OLLAMA_URL: 'http://127.0.0.1:5' }),
    'http://127.0.0.1:5',
  );
});

test('answers are cached until they age out or a refresh is asked for; concurrent reads share one probe', async () => {
  let clock = 1_000;
  let listed = 0;
  const discovery = createRuntimeDiscovery({
    // No PATH and a port nothing listens on: the probe is cheap and local; listing providers counts probes.
    env: { PATH: '', SWITCHYARD_DISCOVERY_OLLAMA_URL: 'http://127.0.0.1:9' },
    providers: () => {
      listed++;
      return [{ id: 'cloud', kind: 'openai', baseUrl: 'https://api.openai.com/v1' }];
    },
    cacheMs: 5_000,
    now: () => clock,
  });
  const [a, b] = await Promise.all([discovery.read(), discovery.read()]);
  assert.equal(listed, 1);
  assert.equal(a, b);
  // A cloud kind is not a local runtime and is never probed.
  assert.deepEqual(
    a.data.map((r) => [r.kind, r.source, r.state]),
    [['ollama', 'default_address', 'unreachable']],
  );
  clock += 4_999;
  assert.equal(await discovery.read(), a);
  assert.notEqual(await discovery.read(true), a);
  assert.equal(listed, 2);
  clock += 5_000;
  await discovery.read();
  assert.equal(listed, 3);
});

test(
  'configured providers: a non-2xx answer and a silent server are unreachable with a fixed-vocabulary ' + 'reason',
  async () => {
    // `/health` answers 503 (llama-server while it loads a model); `/models` never answers.
    const server = createServer((req, res) => {
      if (req.url === '/health')
        res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":"Loading model at /home/me/x.gguf"}');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    try {
      const discovery = createRuntimeDiscovery({
        env: { PATH: '', SWITCHYARD_DISCOVERY_OLLAMA_URL: 'http://127.0.0.1:9' },
        providers: () => [
          { id: 'loading', kind: 'llamacpp', baseUrl: `http://me:pw@${base.slice(7)}/?token=abc` },
          { id: 'silent', kind: 'openai_compatible', baseUrl: `${base}/v1` },
          { id: 'unset', kind: 'ollama', baseUrl: null },
        ],
        httpTimeoutMs: 200,
      });
      const { data } = await discovery.read();
      assert.deepEqual(
        data.filter((r) => r.source === 'provider').map((r) => [r.providerId, r.url, r.state, r.reason]),
        [
          ['loading', base, 'unreachable', 'HTTP 503'],
          ['silent', `${base}/v1`, 'unreachable', 'timed out'],
        ],
      );
    } finally {
      server.closeAllConnections();
      server.close();
    }
  },
);
