import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { Type, Kind, OptionalKind } from '@sinclair/typebox';
import { compile } from '../../protocol/validate.ts';
import { buildOpenApi, openApiPath, plainSchema, type DocumentedRoute } from '../../protocol/openapi.ts';

// The pure builder on a small route table; test/integration/openapi.suite.ts checks the real one.

const Create = Type.Object(
  { name: Type.String({ minLength: 1 }), scopes: Type.Optional(Type.Array(Type.String())) },
  { additionalProperties: false, $id: 'TokenCreate' },
);

const ROUTES: DocumentedRoute[] = [
  { method: 'GET', path: '/health', scope: 'public' },
  { method: 'GET', path: '/v1/tokens', scope: 'admin' },
  { method: 'POST', path: '/v1/tokens', scope: 'admin', body: compile(Create) },
  { method: 'PATCH', path: '/v1/tokens/:id', scope: 'admin', body: compile(Create) },
  { method: 'POST', path: '/v1/catalog/models/:id/actions/:action', scope: 'manage' },
  { method: 'GET', path: '/v1/models', scope: ['inference', 'read'] },
  { method: 'GET', path: '/v1/audit-events', scope: 'read', query: ['limit', 'after'] },
  { method: 'POST', path: '/v1/chat/completions', scope: 'inference' },
  { method: 'POST', path: '/v1/images/edits', scope: 'inference' },
  { method: 'POST', path: '/v1/audio/transcriptions', scope: 'inference' },
  { method: 'GET', path: '/v1/responses/:id', scope: 'inference' },
];

const doc = buildOpenApi(ROUTES, { version: '9.8.7' });
const op = (path: string, method: string) => (doc.paths as Record<string, Record<string, any>>)[path]![method]!;

test('the document validates as OpenAPI 3.1', async () => {
  const result = await new Validator().validate(structuredClone(doc) as Record<string, unknown>);
  assert.deepEqual(result.errors, undefined);
  assert.equal(result.valid, true);
  assert.equal(doc.openapi, '3.1.0');
  assert.equal(doc.info.version, '9.8.7');
  // The validator is a real one: a dangling reference is refused.
  const broken = structuredClone(doc) as any;
  broken.paths['/health'].get.responses['4XX'] = { $ref: '#/components/responses/Missing' };
  assert.equal((await new Validator().validate(broken)).valid, false);
});

test('router parameters become path templates with a required path parameter each', () => {
  assert.equal(openApiPath('/v1/catalog/models/:id/actions/:action'), '/v1/catalog/models/{id}/actions/{action}');
  const action = op('/v1/catalog/models/{id}/actions/{action}', 'post');
  assert.deepEqual(
    action.parameters.map((p: any) => [p.name, p.in, p.required]),
    [
      ['id', 'path', true],
      ['action', 'path', true],
    ],
  );
  assert.equal(op('/v1/tokens', 'get').parameters, undefined);
});

test('declared query parameters are listed as optional query parameters', () => {
  assert.deepEqual(
    op('/v1/audit-events', 'get').parameters.map((p: any) => [p.name, p.in, p.required]),
    [
      ['limit', 'query', false],
      ['after', 'query', false],
    ],
  );
});

test('operation IDs are unique and readable', () => {
  const ids = Object.values(doc.paths).flatMap((item) => Object.values(item).map((o: any) => o.operationId as string));
  assert.equal(new Set(ids).size, ROUTES.length);
  assert.equal(op('/v1/tokens/{id}', 'patch').operationId, 'patchTokensById');
  assert.equal(op('/health', 'get').operationId, 'getHealth');
  const clash = buildOpenApi(
    [
      { method: 'GET', path: '/tokens', scope: 'read' },
      { method: 'GET', path: '/v1/tokens', scope: 'read' },
    ],
    { version: '1' },
  );
  assert.notEqual(clash.paths['/tokens']!.get!.operationId, clash.paths['/v1/tokens']!.get!.operationId);
});

test('a scope is a requirement of each token header; public routes need none', () => {
  assert.deepEqual(op('/health', 'get').security, []);
  assert.deepEqual(op('/v1/tokens', 'get').security, [
    { bearerToken: ['admin'] },
    { serviceToken: ['admin'] },
    { apiKey: ['admin'] },
  ]);
  const either = op('/v1/models', 'get').security;
  assert.equal(either.length, 6);
  assert.ok(
    either.some((s: any) => s.apiKey?.[0] === 'read') && either.some((s: any) => s.bearerToken?.[0] === 'inference'),
  );
  const schemes = doc.components.securitySchemes;
  assert.equal(schemes.serviceToken.name, 'X-Service-Token');
  assert.equal(schemes.apiKey.name, 'x-api-key');
  assert.equal(schemes.bearerToken.scheme, 'bearer');
});

test('typed bodies carry their TypeBox schema without symbol keys or $id', () => {
  const schema = op('/v1/tokens', 'post').requestBody.content['application/json'].schema;
  assert.deepEqual(schema, {
    type: 'object',
    additionalProperties: false,
    required: ['name'],
    properties: { name: { type: 'string', minLength: 1 }, scopes: { type: 'array', items: { type: 'string' } } },
  });
  assert.equal(op('/v1/tokens', 'post').requestBody.required, true);
  const raw = Create as unknown as Record<symbol, unknown>;
  assert.ok(
    raw[Kind] === 'Object' &&
      (Create.properties.scopes as unknown as Record<symbol, unknown>)[OptionalKind] === 'Optional',
  );
  const plain = plainSchema(Create) as Record<string | symbol, unknown>;
  assert.equal(Object.getOwnPropertySymbols(plain).length, 0);
  assert.equal(Object.getOwnPropertySymbols((plain.properties as any).scopes).length, 0);
});

test('gateway routes are provider-shaped: JSON, multipart, both, or no body', () => {
  const chat = op('/v1/chat/completions', 'post');
  assert.deepEqual(Object.keys(chat.requestBody.content), ['application/json']);
  const chatSchema = chat.requestBody.content['application/json'].schema;
  assert.equal(chatSchema.additionalProperties, true);
  assert.match(chatSchema.description, /Provider-shaped/);
  assert.equal(chat['x-endpoint-family'], 'styleA.chat_completions');
  assert.deepEqual(chat.tags, ['gateway']);
  assert.deepEqual(Object.keys(op('/v1/images/edits', 'post').requestBody.content), ['multipart/form-data']);
  assert.deepEqual(Object.keys(op('/v1/audio/transcriptions', 'post').requestBody.content).sort(), [
    'application/json',
    'multipart/form-data',
  ]);
  assert.equal(op('/v1/responses/{id}', 'get').requestBody, undefined);
});

test('every 4xx and 5xx refers to the shared error envelope', () => {
  for (const item of Object.values(doc.paths)) {
    for (const o of Object.values(item) as any[]) {
      assert.deepEqual(o.responses['4XX'], { $ref: '#/components/responses/Error' });
      assert.deepEqual(o.responses['5XX'], { $ref: '#/components/responses/Error' });
    }
  }
  const envelope = doc.components.schemas.ErrorEnvelope;
  assert.ok(envelope.properties.error.properties.code.enum.includes('UNAUTHORIZED'));
});
