import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { PROVIDER_KINDS } from '../../../../protocol/providers.ts';
import { ADAPTERS } from '../../../../workers/proxy/providers/index.ts';

describe('ADAPTERS', () => {
  it('has exactly the seven provider kinds', () => {
    assert.deepEqual(Object.keys(ADAPTERS).sort(), [...PROVIDER_KINDS].sort());
    assert.equal(Object.keys(ADAPTERS).length, 7);
  });

  it('authenticates each kind the way its provider expects', () => {
    const key = 'k-0123456789';
    const bearer = { authorization: `Bearer ${key}` };
    assert.deepEqual(ADAPTERS.openai.authHeaders(key), bearer);
    assert.deepEqual(ADAPTERS.openrouter.authHeaders(key), bearer);
    assert.deepEqual(ADAPTERS.openai_compatible.authHeaders(key), bearer);
    assert.deepEqual(ADAPTERS.llamacpp.authHeaders(key), bearer);
    assert.deepEqual(ADAPTERS.ollama.authHeaders(key), bearer);
    assert.deepEqual(ADAPTERS.anthropic.authHeaders(key), { 'x-api-key': key, 'anthropic-version': '2023-06-01' });
    assert.deepEqual(ADAPTERS.embedded.authHeaders(key), {});
  });

  it('sends no credential header when there is no credential', () => {
    for (const kind of PROVIDER_KINDS) {
      const headers = Object.keys(ADAPTERS[kind].authHeaders(null)).map((h) => h.toLowerCase());
      assert.equal(headers.includes('authorization') || headers.includes('x-api-key'), false, kind);
    }
  });

  it('only the embedded runtime has no upstream model list', () => {
    const without = PROVIDER_KINDS.filter((kind) => ADAPTERS[kind].models === null);
    assert.deepEqual(without, ['embedded']);
  });
});
