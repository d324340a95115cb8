import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { Agent } from 'undici';
import type { ProviderKind } from '../../../protocol/providers.ts';
import { listModels } from '../../../workers/proxy/list-models.ts';
import type { RecordedRequest } from '../../fakes/http.ts';
import * as anthropicFake from '../../fakes/anthropic.ts';
import * as ollamaFake from '../../fakes/ollama.ts';
import * as openaiFake from '../../fakes/openai.ts';
import { assertCredentialOnlyIn, assertNoCredential, rejectsWith, targetFor } from './helpers.ts';

// What every kind that lists over HTTP must do alike: authenticate as its provider expects, and turn each
// kind of failure into the same error code without ever quoting the credential.

interface Fake {
  baseUrl: string;
  requests: RecordedRequest[];
  failNext(status: number, body: unknown, headers?: Record<string, string>): void;
  hangNext(): void;
  close(): Promise<void>;
}

interface KindCase {
  kind: ProviderKind;
  key: string;
  start(apiKey: string): Promise<Fake>;
  header: string;
  value(key: string): string;
}

async function styleA(flavour: openaiFake.Flavour, apiKey: string): Promise<Fake> {
  const fake = await openaiFake.start({ flavour, apiKey });
  fake.setModels([{ id: 'model-a' }, { id: 'model-b' }]);
  return fake;
}

const bearer = (key: string): string => `Bearer ${key}`;

// Keys without a secret shape, so that only the exact-credential scrub can keep them out of errors.
const CASES: KindCase[] = [
  {
    kind: 'openai',
    key: 'openai-plain-credential-0001',
    start: (k) => styleA('openai', k),
    header: 'authorization',
    value: bearer,
  },
  {
    kind: 'openrouter',
    key: 'openrouter-plain-credential-0002',
    start: (k) => styleA('openrouter', k),
    header: 'authorization',
    value: bearer,
  },
  {
    kind: 'openai_compatible',
    key: 'compatible-plain-credential-0003',
    start: (k) => styleA('compatible', k),
    header: 'authorization',
    value: bearer,
  },
  {
    kind: 'llamacpp',
    key: 'llamacpp-plain-credential-0004',
    start: (k) => styleA('llamacpp', k),
    header: 'authorization',
    value: bearer,
  },
  {
    kind: 'anthropic',
    key: 'anthropic-plain-credential-0005',
    async start(apiKey) {
      const fake = await anthropicFake.start({ apiKey });
      fake.setModels([{ id: 'model-a' }, { id: 'model-b' }]);
      return fake;
    },
    header: 'x-api-key',
    value: (key) => key,
  },
  {
    kind: 'ollama',
    key: 'ollama-plain-credential-0006',
    async start(apiKey) {
      const fake = await ollamaFake.start({ apiKey });
      fake.setModels([{ name: 'model-a' }, { name: 'model-b' }]);
      return fake;
    },
    header: 'authorization',
    value: bearer,
  },
];

for (const c of CASES) {
  describe(`listModels: ${c.kind}, common behaviour`, () => {
    let fake: Fake;
    before(async () => {
      fake = await c.start(c.key);
    });
    after(() => fake.close());
    const target = (overrides = {}) => targetFor(c.kind, fake.baseUrl, overrides);

    it('lists the models, sending the credential only in its header', async () => {
      const models = await listModels(target(), c.key);
      assert.deepEqual(
        models.map((m) => m.upstreamModelId),
        ['model-a', 'model-b'],
      );
      const req = fake.requests.at(-1);
      assert.ok(req);
      assertCredentialOnlyIn(req, c.key, c.header, c.value(c.key));
    });

    it("a wrong credential is UPSTREAM_AUTH_FAILED, whatever the provider's refusal says", async () => {
      const wrong = `${c.key}-wrong`;
      const err = await rejectsWith(listModels(target(), wrong), 'UPSTREAM_AUTH_FAILED');
      assert.equal(err.details.upstreamStatus, 401);
      assertNoCredential(err, wrong);
    });

    it('429 is UPSTREAM_RATE_LIMITED with retryAfter from retry-after', async () => {
      fake.failNext(
        429,
        { error: { message: 'Rate limit reached', type: 'rate_limit_error' } },
        { 'retry-after': '17' },
      );
      const err = await rejectsWith(listModels(target(), c.key), 'UPSTREAM_RATE_LIMITED');
      assert.equal(err.details.retryAfter, 17);
      assert.equal(err.headers['retry-after'], '17');
      assertNoCredential(err, c.key);
    });

    it('500 is UPSTREAM_ERROR with upstreamStatus 500', async () => {
      fake.failNext(500, {
        error: { message: 'The server had an error while processing your request.', type: 'server_error' },
      });
      const err = await rejectsWith(listModels(target(), c.key), 'UPSTREAM_ERROR');
      assert.equal(err.details.upstreamStatus, 500);
      assert.equal(err.details.upstreamMessage, 'The server had an error while processing your request.');
    });

    it('an error body that echoes the credential is quoted without it', async () => {
      fake.failNext(400, {
        error: { message: `Key ${c.key} is not valid for this org`, type: 'invalid_request_error' },
      });
      const err = await rejectsWith(listModels(target(), c.key), 'UPSTREAM_ERROR');
      assert.equal(err.details.upstreamStatus, 400);
      assert.equal(err.details.upstreamMessage, 'Key [redacted] is not valid for this org');
      assertNoCredential(err, c.key);
    });

    for (const [label, body] of [
      ['a body that is not JSON', 'Internal gateway page'],
      ['JSON of another shape', { result: [] }],
      ['a JSON array', []],
      ['the list under the wrong type', { object: 'list', data: {}, models: {} }],
    ] as const) {
      it(`${label} on 200 is UPSTREAM_ERROR`, async () => {
        fake.failNext(200, body);
        const err = await rejectsWith(listModels(target(), c.key), 'UPSTREAM_ERROR');
        assert.equal(err.message, 'The provider answered its model list in an unexpected shape.');
        assertNoCredential(err, c.key);
      });
    }

    it('a provider that never answers is UPSTREAM_TIMEOUT after headMs', async () => {
      fake.hangNext();
      const err = await rejectsWith(
        listModels(target({ timeouts: { connectMs: 2000, headMs: 200, idleMs: 2000 } }), c.key),
        'UPSTREAM_TIMEOUT',
      );
      assert.equal(err.details.reason, 'head_timeout');
      assertNoCredential(err, c.key);
    });
  });
}

describe('listModels: transport failures', () => {
  it('a closed port is UPSTREAM_UNREACHABLE', async () => {
    const server = createServer();
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    await new Promise<void>((resolve) => server.close(() => resolve()));
    const key = 'closed-port-plain-credential';
    const err = await rejectsWith(
      listModels(targetFor('openai', `http://127.0.0.1:${port}/v1`), key),
      'UPSTREAM_UNREACHABLE',
    );
    assert.equal(err.details.reason, 'connection_refused');
    assertNoCredential(err, key);
  });

  it('a name that does not resolve is UPSTREAM_UNREACHABLE', async () => {
    const target = targetFor('ollama', 'http://switchyard-test.invalid:11434', {
      timeouts: { connectMs: 2000, headMs: 2000, idleMs: 2000 },
    });
    const err = await rejectsWith(listModels(target, null), 'UPSTREAM_UNREACHABLE');
    // Where the resolver itself is unreachable, the lookup ends in the connect time-out instead.
    assert.ok(['dns', 'connect_timeout'].includes(String(err.details.reason)), String(err.details.reason));
  });

  it('a TLS handshake with a plain-HTTP server is UPSTREAM_UNREACHABLE (tls)', async () => {
    const fake = await openaiFake.start({ flavour: 'openai' });
    try {
      const err = await rejectsWith(
        listModels(targetFor('openai', fake.baseUrl.replace('http:', 'https:')), null),
        'UPSTREAM_UNREACHABLE',
      );
      assert.equal(err.details.reason, 'tls');
    } finally {
      await fake.close();
    }
  });
});

describe('listModels: lists', () => {
  let fake: openaiFake.OpenAIFake;
  before(async () => {
    fake = await openaiFake.start({ flavour: 'openai' });
  });
  after(() => fake.close());

  it('keeps the first entry of a repeated ID and skips entries without a string ID', async () => {
    fake.failNext(200, {
      object: 'list',
      data: [
        { id: 'a', created: 1 },
        { id: 7 },
        { object: 'model' },
        { id: '' },
        'junk',
        { id: 'a', created: 2 },
        { id: 'b' },
      ],
    });
    const models = await listModels(targetFor('openai', fake.baseUrl), null);
    assert.deepEqual(
      models.map((m) => [m.upstreamModelId, m.created]),
      [
        ['a', 1],
        ['b', null],
      ],
    );
  });

  it("a baseUrl without the provider's /v1 prefix is UPSTREAM_ERROR with the upstream 404", async () => {
    const origin = fake.baseUrl.replace(/\/v1$/, '');
    const err = await rejectsWith(listModels(targetFor('openai', origin), null), 'UPSTREAM_ERROR');
    assert.equal(err.details.upstreamStatus, 404);
    assert.equal(fake.requests.at(-1)?.path, '/models');
  });

  it('uses a dispatcher the caller passes and leaves it open', async () => {
    const agent = new Agent();
    try {
      fake.setModels([{ id: 'via-agent' }]);
      const models = await listModels(targetFor('openai', fake.baseUrl), null, { dispatcher: agent });
      assert.deepEqual(
        models.map((m) => m.upstreamModelId),
        ['via-agent'],
      );
      assert.equal(agent.destroyed, false);
      assert.equal(agent.closed, false);
    } finally {
      await agent.close();
    }
  });

  it('embedded lists nothing and sends no request', async () => {
    const before = fake.requests.length;
    assert.deepEqual(await listModels(targetFor('embedded', fake.baseUrl), null), []);
    assert.equal(fake.requests.length, before);
  });
});

describe('listModels: paging', () => {
  let fake: anthropicFake.AnthropicFake;
  const KEY = 'paging-plain-credential';
  before(async () => {
    fake = await anthropicFake.start({ apiKey: KEY });
  });
  after(() => fake.close());

  it('deduplicates across pages', async () => {
    fake.failNext(200, {
      data: [
        { type: 'model', id: 'a' },
        { type: 'model', id: 'b' },
      ],
      has_more: true,
      first_id: 'a',
      last_id: 'b',
    });
    fake.failNext(200, {
      data: [
        { type: 'model', id: 'b' },
        { type: 'model', id: 'c' },
      ],
      has_more: false,
      first_id: 'b',
      last_id: 'c',
    });
    const models = await listModels(targetFor('anthropic', fake.baseUrl), KEY);
    assert.deepEqual(
      models.map((m) => m.upstreamModelId),
      ['a', 'b', 'c'],
    );
  });

  it('gives up with UPSTREAM_ERROR after 50 pages of a list that never ends', async () => {
    const before = fake.requests.length;
    for (let i = 0; i < 50; i++) {
      fake.failNext(200, {
        data: [{ type: 'model', id: `m${i}` }],
        has_more: true,
        first_id: `m${i}`,
        last_id: `m${i}`,
      });
    }
    const err = await rejectsWith(listModels(targetFor('anthropic', fake.baseUrl), KEY), 'UPSTREAM_ERROR');
    assert.equal(err.details.pages, 50);
    assert.equal(fake.requests.length - before, 50);
  });
});
