import assert from 'node:assert/strict';
import type { ModelListCache } from '../../protocol/providers.ts';
import { describe, it } from 'node:test';
import { buildCatalog } from '../../state/catalog-index.ts';
import { listingOf, provider, record } from '../helpers/catalog.ts';

const listing = (...ids: string[]) => listingOf(ids);

describe('buildCatalog', () => {
  it('merges explicit and auto records; the explicit one wins', () => {
    const c = buildCatalog(
      [provider('p')],
      [record('p', 'm1', { displayName: 'Mine' })],
      new Map([['p', listing('m1', 'm2')]]),
    );
    assert.deepEqual(
      c.all().map((m) => [m.id, m.source, m.displayName]),
      [
        ['p/m1', 'explicit', 'Mine'],
        ['p/m2', 'auto', 'm2'],
      ],
    );
    assert.equal(c.get('p/m1')!.created, 5, 'creation time comes from the listing when known');
  });

  it('resolves a direct ID before an alias of the same spelling', () => {
    const c = buildCatalog(
      [provider('p')],
      [record('p', 'a'), record('p', 'b', { aliases: ['p/a', 'short'] })],
      new Map(),
    );
    assert.equal(c.resolve('p/a')!.model.id, 'p/a');
    assert.equal(c.resolve('short')!.model.id, 'p/b');
    assert.equal(c.resolve('nothing'), null);
  });

  it('a hidden model resolves neither by ID nor by alias, and is not discoverable', () => {
    const c = buildCatalog([provider('p')], [record('p', 'h', { hidden: true, aliases: ['secret'] })], new Map());
    assert.equal(c.resolve('p/h'), null);
    assert.equal(c.resolve('secret'), null);
    assert.deepEqual(c.discoverable(), []);
    assert.equal(c.aliasOwner('secret'), 'p/h', 'the alias stays taken');
  });

  it('a disabled provider takes its explicit and auto models out of resolution and discovery', () => {
    const c = buildCatalog(
      [provider('p', { enabled: false })],
      [record('p', 'x', { aliases: ['ax'] })],
      new Map([['p', listing('y')]]),
    );
    assert.equal(c.resolve('p/x'), null);
    assert.equal(c.resolve('ax'), null);
    assert.deepEqual(c.discoverable(), []);
    assert.deepEqual(
      c.all().map((m) => m.id),
      ['p/x'],
      'auto models leave with the provider; explicit records stay listed',
    );
  });

  it('autoProxyModels off keeps only explicit records', () => {
    const c = buildCatalog(
      [provider('p', { autoProxyModels: false })],
      [record('p', 'x')],
      new Map([['p', listing('x', 'y')]]),
    );
    assert.deepEqual(
      c.discoverable().map((m) => m.id),
      ['p/x'],
    );
  });

  it('models without families are not routable', () => {
    const empty: ModelListCache = {
      fetchedAt: 1,
      error: null,
      models: [{ upstreamModelId: 'mod', displayName: null, created: null, contextWindow: null, families: [] }],
    };
    const c = buildCatalog([provider('p')], [], new Map([['p', empty]]));
    assert.equal(c.all().length, 1);
    assert.equal(c.resolve('p/mod'), null);
  });

  it('regression W2.6: a listed upstream ID longer than 400 characters stays out, so no model ID exceeds 464', () => {
    const long = 'l'.repeat(401);
    const c = buildCatalog([provider('p')], [], new Map([['p', listing('m1', 'l'.repeat(400), long)]]));
    assert.deepEqual(
      c.all().map((m) => m.upstreamModelId.length),
      [400, 2],
    );
    assert.equal(c.get(`p/${long}`), undefined);
  });
});
