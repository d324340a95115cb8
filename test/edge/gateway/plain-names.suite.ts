import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { buildCatalog } from '../../../state/catalog-index.ts';
import { firstOf, plainNames } from '../../../edge/gateway/plain-names.ts';
import { resolveModel } from '../../../edge/gateway/resolve.ts';
import { ServiceError } from '../../../protocol/errors.ts';
import type { EndpointFamily } from '../../../protocol/families.ts';
import { DEFAULT_TIMEOUTS } from '../../../protocol/providers.ts';
import type { ModelListCache } from '../../../store/model-repo.ts';
import type { ProviderRecord } from '../../../store/provider-repo.ts';
import { credential, listingOf } from '../../helpers/catalog.ts';

// What agents send is the provider's own model name; it resolves after a direct ID and an alias (the
// contract's order), through routing.providerOrder, else through the one provider that has it.

const provider = (id: string, kind: ProviderRecord['kind'], over: Partial<ProviderRecord> = {}): ProviderRecord => ({
  id,
  kind,
  displayName: id,
  baseUrl: 'http://127.0.0.1:1/v1',
  enabled: true,
  autoProxyModels: true,
  credentials: [credential('cred_x')],
  hints: {},
  timeouts: { ...DEFAULT_TIMEOUTS },
  createdAt: 0,
  updatedAt: 0,
  ...over,
});
const listing = (family: EndpointFamily, ...ids: string[]): ModelListCache => listingOf(ids, family);
const CHAT: EndpointFamily = 'styleA.chat_completions';

const catalog = () =>
  buildCatalog(
    [
      provider('anthropic', 'anthropic'),
      provider('openai', 'openai'),
      provider('proxy', 'openai_compatible'),
      provider('off', 'openai', { enabled: false }),
    ],
    [],
    new Map([
      ['anthropic', listing('styleB.messages', 'claude-sonnet-4-5')],
      ['openai', listing(CHAT, 'gpt-5', 'shared')],
      ['proxy', listing(CHAT, 'shared', 'gpt-5-mini')],
      ['off', listing(CHAT, 'only-off')],
    ]),
  );

describe('plain model names', () => {
  it('resolve to the one provider that has them, through the op check as any name', () => {
    const unresolved = plainNames(() => []);
    const c = catalog();
    assert.equal(
      resolveModel(c, 'messages', 'claude-sonnet-4-5', { unresolved }).model.id,
      'anthropic/claude-sonnet-4-5',
    );
    assert.equal(resolveModel(c, 'chat.completions', 'gpt-5-mini', { unresolved }).model.id, 'proxy/gpt-5-mini');
    // A disabled provider's model is not a candidate.
    assert.throws(
      () => resolveModel(c, 'chat.completions', 'only-off', { unresolved }),
      (e: unknown) => e instanceof ServiceError && e.code === 'MODEL_NOT_FOUND',
    );
  });

  it('a name two providers have is 404 naming both, until routing.providerOrder picks', () => {
    let order: string[] = [];
    const unresolved = plainNames(() => order);
    const c = catalog();
    assert.throws(
      () => resolveModel(c, 'chat.completions', 'shared', { unresolved }),
      (e: unknown) =>
        e instanceof ServiceError &&
        e.code === 'MODEL_NOT_FOUND' &&
        e.param === 'model' &&
        /openai\/shared, proxy\/shared/.test(e.message),
    );
    order = ['proxy', 'openai'];
    assert.equal(resolveModel(c, 'chat.completions', 'shared', { unresolved }).model.id, 'proxy/shared');
    order = ['nope', 'openai'];
    assert.equal(resolveModel(c, 'chat.completions', 'shared', { unresolved }).model.id, 'openai/shared');
  });

  it('never shadow a direct ID or an alias, and leave preset names alone', () => {
    const unresolved = plainNames(() => ['openai']);
    const c = catalog();
    assert.equal(resolveModel(c, 'chat.completions', 'proxy/shared', { unresolved }).model.id, 'proxy/shared');
    assert.equal(unresolved(c, '@preset/x'), null);
    assert.equal(unresolved(c, 'nothing-has-this'), null);
  });

  it('firstOf asks each second chance in turn', () => {
    const c = catalog();
    const never = () => null;
    assert.equal(
      firstOf(
        never,
        plainNames(() => []),
      )(c, 'gpt-5')?.model.id,
      'openai/gpt-5',
    );
    assert.equal(firstOf(never, never)(c, 'gpt-5'), null);
  });
});
