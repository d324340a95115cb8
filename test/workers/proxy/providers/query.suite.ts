import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { readFileSync } from 'node:fs';
import { ServiceError } from '../../../../protocol/errors.ts';
import { GATEWAY_OPS, type GatewayOp } from '../../../../protocol/gateway.ts';
import { ADAPTERS } from '../../../../workers/proxy/providers/index.ts';
import { FORWARDED_QUERY, forwardedQuery } from '../../../../workers/proxy/providers/query.ts';
import { targetFor } from '../helpers.ts';

// Gateway query strings: the documented parameters of each operation go upstream, re-encoded; the rest stay
// behind; a raw control byte never leaves.

describe('forwardedQuery', () => {
  it("keeps styleB's beta=true, which Claude Code sends on /v1/messages", () => {
    assert.equal(forwardedQuery('messages', 'beta=true'), 'beta=true');
    assert.equal(forwardedQuery('messages.count_tokens', 'beta=true&x=1'), 'beta=true');
  });

  it('keeps the Responses API list and retrieve parameters, in order, repeated arrays included', () => {
    assert.equal(
      forwardedQuery(
        'responses.input_items',
        'limit=20&order=asc&after=msg_1&include%5B%5D=file_search_call.results&' +
          'include%5B%5D=message.output_text.logprobs&debug=1',
      ),
      'limit=20&order=asc&after=msg_1&include%5B%5D=file_search_call.results&' +
        'include%5B%5D=message.output_text.logprobs',
    );
    assert.equal(
      forwardedQuery('responses.get', 'stream=true&starting_after=42&include[]=reasoning.encrypted_content&trace=abc'),
      'stream=true&starting_after=42&include%5B%5D=reasoning.encrypted_content',
    );
    assert.equal(forwardedQuery('responses.get', 'include=a'), 'include=a');
  });

  it("keeps Azure's api-version on styleA routes only", () => {
    assert.equal(forwardedQuery('chat.completions', 'api-version=2024-10-21'), 'api-version=2024-10-21');
    assert.equal(forwardedQuery('embeddings', 'api-version=preview&foo=bar'), 'api-version=preview');
    assert.equal(forwardedQuery('messages', 'api-version=2024-10-21'), '');
  });

  it('drops every parameter an operation does not document', () => {
    assert.equal(forwardedQuery('chat.completions', 'stream=true&model=x&key=sk-abc'), '');
    assert.equal(forwardedQuery('rerank', 'api-version=1&top_n=3'), '');
    assert.equal(forwardedQuery('messages', 'Beta=true&beta%00=true'), '');
    assert.equal(forwardedQuery('messages', ''), '');
    assert.equal(forwardedQuery('messages', '&&=&beta&'), 'beta');
  });

  it('re-encodes names and values: one spelling, no raw byte of the client', () => {
    assert.equal(forwardedQuery('responses.input_items', 'after=a+b%20c&order=as%63'), 'after=a%20b%20c&order=asc');
    assert.equal(
      forwardedQuery('responses.input_items', 'after=x\'"<>{}|^`'),
      `after=${encodeURIComponent('x\'"<>{}|^`')}`,
    );
    assert.equal(forwardedQuery('responses.input_items', 'after=%E2%9C%93'), 'after=%E2%9C%93');
  });

  for (const [label, query] of [
    ['CR LF', 'after=x%0D%0AHost:%20evil'],
    ['a lone LF', 'after=%0A'],
    ['NUL', 'after=a%00b'],
    ['DEL', 'limit=1%7F'],
    ['a C1 control', 'order=%C2%85'],
    ['a tab', 'beta=true%09'],
    ['a malformed percent sequence', 'after=%E2%9C'],
    ['a stray percent', 'limit=100%'],
  ] as const) {
    it(`refuses ${label} in a forwarded parameter with 400 naming it`, () => {
      const op: GatewayOp = query.startsWith('beta') ? 'messages' : 'responses.input_items';
      assert.throws(
        () => forwardedQuery(op, query),
        (err: unknown) =>
          err instanceof ServiceError &&
          err.code === 'INVALID_REQUEST' &&
          err.param === query.slice(0, query.indexOf('=')),
      );
    });
  }

  it('ignores control bytes in parameters it drops anyway', () => {
    assert.equal(forwardedQuery('responses.input_items', 'x=%0D%0A&y=%zz&limit=5'), 'limit=5');
  });

  it('every operation has a list, and docs/api.md states each list', () => {
    assert.deepEqual(Object.keys(FORWARDED_QUERY).sort(), Object.keys(GATEWAY_OPS).sort());
    const docs = readFileSync(new URL('../../../../docs/api.md', import.meta.url), 'utf8');
    const section = docs.slice(docs.indexOf('Query parameters of gateway calls'));
    for (const names of Object.values(FORWARDED_QUERY))
      for (const name of names) assert.ok(section.includes(`\`${name}\``), `docs/api.md lists ${name}`);
  });
});

describe('gateway URLs carry only the forwarded query', () => {
  it('for every kind that serves messages or responses', () => {
    const target = targetFor('anthropic', 'https://api.anthropic.example');
    assert.equal(
      ADAPTERS.anthropic.gateway!.url('messages', target, {}, 'beta=true&debug=%0D%0A'),
      'https://api.anthropic.example/v1/messages?beta=true',
    );
    const openai = targetFor('openai', 'https://api.openai.example/v1');
    assert.equal(
      ADAPTERS.openai.gateway!.url('responses.input_items', openai, { id: 'resp_1' }, 'limit=2&evil=1'),
      'https://api.openai.example/v1/responses/resp_1/input_items?limit=2',
    );
    assert.equal(
      ADAPTERS.openai.gateway!.url('chat.completions', openai, {}, 'x=1'),
      'https://api.openai.example/v1/chat/completions',
    );
  });
});
