import assert from 'node:assert/strict';
import { readFileSync, rmSync } from 'node:fs';
import { after, before, test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Ajv2020 } from 'ajv/dist/2020.js';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';

// GET /openapi.json from the real service: a valid OpenAPI 3.1 document of exactly the routes docs/api.md
// lists, served to read tokens only.

const HTTP_METHODS = ['get', 'post', 'put', 'patch', 'delete'];

let svc: InProcessService;
let doc: any;
before(async () => {
  svc = await startInProcess();
  await svc.request('POST', '/v1/providers', {
    body: {
      kind: 'openai',
      id: 'openapi-secret-provider',
      credential: 'zz-openapi-upstream-key',
      baseUrl: 'http://127.0.0.1:9/v1',
    },
  });
  const reply = await svc.request('GET', '/openapi.json');
  assert.equal(reply.status, 200);
  doc = reply.json;
});
after(async () => {
  await svc?.stop();
  if (svc) rmSync(svc.home, { recursive: true, force: true });
});

const operations = () =>
  Object.entries(doc.paths as Record<string, Record<string, any>>).flatMap(([path, item]) =>
    Object.entries(item)
      .filter(([method]) => HTTP_METHODS.includes(method))
      .map(([method, op]) => ({ method: method.toUpperCase(), path, op })),
  );

test('the served document validates as OpenAPI 3.1', async () => {
  assert.equal(doc.openapi, '3.1.0');
  const result = await new Validator().validate(structuredClone(doc));
  assert.deepEqual(result.errors, undefined);
  assert.equal(result.valid, true);
  const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  assert.equal(doc.info.version, pkg.version);
});

test('every schema in it is valid JSON Schema 2020-12 (the OpenAPI meta-schema does not look inside them)', () => {
  // Strict: a keyword JSON Schema does not know (a TypeBox leftover) is an error, not ignored.
  const ajv = new Ajv2020({ strict: true, strictRequired: false, validateFormats: false });
  const schemas: unknown[] = [doc.components.schemas.ErrorEnvelope];
  for (const { op } of operations()) {
    for (const media of Object.values(op.requestBody?.content ?? {}) as { schema: unknown }[])
      schemas.push(media.schema);
    for (const p of op.parameters ?? []) schemas.push(p.schema);
  }
  assert.ok(schemas.length > 20);
  for (const schema of schemas)
    assert.doesNotThrow(() => ajv.compile(schema as object), JSON.stringify(schema).slice(0, 300));
});

/** `| METHOD | /path |` rows of docs/api.md's route tables. */
function documentedRoutes(): { method: string; path: string }[] {
  const text = readFileSync(new URL('../../docs/api.md', import.meta.url), 'utf8');
  return [...text.matchAll(/^\|\s*(GET|POST|PUT|PATCH|DELETE)\s*\|\s*(\/\S*)\s*\|/gm)].map((m) => ({
    method: m[1]!,
    path: m[2]!,
  }));
}

/**
 * A row covers an operation when every segment is equal or is a template on both sides, or the row names one
 * value of the operation's template (docs list `/v1/providers/{id}/actions/test`; the route takes `{action}`).
 */
function covers(row: { method: string; path: string }, op: { method: string; path: string }): boolean {
  if (row.method !== op.method) return false;
  const a = row.path.split('/');
  const b = op.path.split('/');
  const template = (s: string) => s.startsWith('{') && s.endsWith('}');
  return a.length === b.length && a.every((seg, i) => seg === b[i] || template(b[i]!));
}

test('every route docs/api.md lists is in the document, and every route in it is in docs/api.md', () => {
  const rows = documentedRoutes();
  const ops = operations();
  assert.ok(rows.length > 50, `only ${rows.length} route rows parsed`);
  const undocumented = ops.filter((op) => !rows.some((row) => covers(row, op))).map((op) => `${op.method} ${op.path}`);
  const unserved = rows.filter((row) => !ops.some((op) => covers(row, op))).map((row) => `${row.method} ${row.path}`);
  assert.deepEqual(undocumented, [], 'served but not in docs/api.md');
  assert.deepEqual(unserved, [], 'in docs/api.md but not served');
});

test('covers itself, the gateway and the typed writes', () => {
  const self = doc.paths['/openapi.json'].get;
  assert.ok(self.security.some((s: Record<string, string[]>) => s.bearerToken?.[0] === 'read'));
  const chat = doc.paths['/v1/chat/completions'].post;
  assert.equal(chat.requestBody.content['application/json'].schema.additionalProperties, true);
  assert.ok(doc.paths['/v1/images/edits'].post.requestBody.content['multipart/form-data']);
  const tokenCreate = doc.paths['/v1/tokens'].post.requestBody.content['application/json'].schema;
  assert.equal(tokenCreate.additionalProperties, false);
  assert.ok(tokenCreate.properties.name);
  assert.deepEqual(doc.paths['/health'].get.security, []);
});

test('needs a token with the read scope', async () => {
  const anonymous = await svc.request('GET', '/openapi.json', { token: null });
  assert.equal(anonymous.status, 401);
  assert.equal(anonymous.json.error.code, 'UNAUTHORIZED');
  for (const [scopes, status] of [
    [['read'], 200],
    [['inference'], 403],
  ] as const) {
    const created = await svc.request('POST', '/v1/tokens', { body: { name: `openapi-${scopes[0]}`, scopes } });
    svc.markSecretBearing(created);
    const reply = await svc.request('GET', '/openapi.json', { token: created.json.secret });
    assert.equal(reply.status, status, scopes[0]);
    if (status === 200) {
      assert.match(reply.headers['content-type'] ?? '', /^application\/json/);
      assert.deepEqual(reply.json, doc);
    }
  }
});

test('holds no record, secret or path of this service', () => {
  const text = svc.responsesText();
  assert.ok(text.includes('"openapi":"3.1.0"'));
  for (const needle of [
    'openapi-secret-provider',
    'zz-openapi-upstream-key',
    'cred_',
    'sk-svc-',
    svc.home,
    '127.0.0.1:9',
  ]) {
    assert.ok(!JSON.stringify(doc).includes(needle), needle);
  }
  assert.ok(!text.includes('zz-openapi-upstream-key'));
});
