import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { createRouter, route, type HttpMethod, type Match, type RouteDef } from '../../../edge/http/router.ts';

const def = (method: HttpMethod, path: string): RouteDef =>
  route({ method, path, scope: 'read', handle: () => ({ body: null }) });

const routes = [
  def('GET', '/health'),
  def('GET', '/v1/tokens'),
  def('POST', '/v1/tokens'),
  def('GET', '/v1/tokens/:id'),
  def('PATCH', '/v1/tokens/:id'),
  def('DELETE', '/v1/tokens/:id'),
  def('GET', '/v1/providers/:provider/models/:model'),
];
const router = createRouter(routes);

function found(m: Match): { route: RouteDef; params: Record<string, string> } {
  assert.equal(m.kind, 'found', JSON.stringify(m));
  if (m.kind !== 'found') throw new Error('unreachable');
  return m;
}

describe('createRouter', () => {
  it('matches static routes by method', () => {
    const get = found(router.match('GET', '/v1/tokens'));
    assert.equal(get.route, routes[1]);
    assert.deepEqual(get.params, {});
    assert.equal(found(router.match('POST', '/v1/tokens')).route, routes[2]);
  });

  it('matches param routes and extracts params', () => {
    const m = found(router.match('PATCH', '/v1/tokens/tok_123'));
    assert.equal(m.route, routes[4]);
    assert.deepEqual(m.params, { id: 'tok_123' });
    const two = found(router.match('GET', '/v1/providers/openai/models/gpt-x'));
    assert.deepEqual(two.params, { provider: 'openai', model: 'gpt-x' });
  });

  it('percent-decodes params', () => {
    assert.deepEqual(found(router.match('GET', '/v1/tokens/a%2Fb%20c')).params, { id: 'a/b c' });
    assert.deepEqual(found(router.match('GET', '/v1/providers/p/models/org%2Fmodel%3A7b')).params, {
      provider: 'p',
      model: 'org/model:7b',
    });
  });

  it('throws URIError for malformed percent-encoding', () => {
    assert.throws(() => router.match('GET', '/v1/tokens/%E0%A4%A'), URIError);
  });

  it('answers HEAD with the GET route of the path, and HEAD alone where no GET is', () => {
    assert.equal(found(router.match('HEAD', '/v1/tokens')).route, found(router.match('GET', '/v1/tokens')).route);
    assert.deepEqual(found(router.match('HEAD', '/v1/tokens/tok_1')).params, { id: 'tok_1' });
    assert.deepEqual(router.match('HEAD', '/nope'), { kind: 'none' });
  });

  it('answers a known path with the wrong method with the allow list', () => {
    assert.deepEqual(router.match('PUT', '/v1/tokens'), { kind: 'method', allow: ['GET', 'HEAD', 'POST'] });
    assert.deepEqual(router.match('POST', '/v1/tokens/tok_1'), {
      kind: 'method',
      allow: ['GET', 'HEAD', 'PATCH', 'DELETE'],
    });
    assert.deepEqual(router.match('get', '/health'), { kind: 'method', allow: ['GET', 'HEAD'] });
  });

  for (const path of [
    '/nope',
    '/v1/tokens/a/b',
    '/v1/token',
    '/v1/tokens/',
    '/v1/tokens//',
    '/v1/providers//models/m',
    '/v1/providers/p/models/',
    '/',
    '',
    '/health/',
  ]) {
    it(`answers none for ${JSON.stringify(path)}`, () => {
      assert.deepEqual(router.match('GET', path), { kind: 'none' });
    });
  }

  it('does not match a literal segment against a different one', () => {
    assert.deepEqual(router.match('GET', '/v1/providers/p/modelz/m'), { kind: 'none' });
  });

  it('refuses duplicate static and param routes', () => {
    assert.throws(() => createRouter([def('GET', '/a'), def('GET', '/a')]), /duplicate route GET \/a/);
    assert.throws(
      () => createRouter([def('GET', '/a/:id'), def('POST', '/a/:id'), def('GET', '/a/:id')]),
      /duplicate route GET \/a\/:id/,
    );
  });

  it('refuses one path shape whose parameters are named differently (a 405 would list too few methods)', () => {
    assert.throws(() => createRouter([def('GET', '/a/:id'), def('DELETE', '/a/:key')]), /name their parameters alike/);
  });

  it('allows the same path under different methods', () => {
    assert.doesNotThrow(() => createRouter([def('GET', '/a/:id'), def('DELETE', '/a/:id')]));
  });
});
