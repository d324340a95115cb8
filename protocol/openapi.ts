import type { TSchema } from '@sinclair/typebox';
import { ERROR_CODES } from './errors.ts';
import { GATEWAY_OPS } from './gateway.ts';

// GET /openapi.json, derived from the route table the edge serves and from the TypeBox schemas it validates
// with, like /v1/capabilities: a route cannot be served undocumented or documented but not served. Pure: the
// caller passes the routes and the version. Answer bodies are not typed in code, so docs/api.md stays the
// reference for them; this document holds what the code knows for certain.

/** What the builder reads of a route; the edge's RouteDef satisfies it (a TypeCheck has `Schema()`). */
export interface DocumentedRoute {
  method: string;
  path: string;
  scope: string | readonly string[];
  body?: { Schema(): TSchema };
  /** Query parameter names, when a route declares them. */
  query?: readonly string[];
}

export interface OpenApiInfo {
  version: string;
}

type Json = Record<string, unknown>;

const SCHEMES = {
  bearerToken: { type: 'http', scheme: 'bearer', description: 'A local token: `Authorization: Bearer <token>`.' },
  serviceToken: {
    type: 'apiKey',
    in: 'header',
    name: 'X-Service-Token',
    description: 'A local token in `X-Service-Token`.',
  },
  apiKey: {
    type: 'apiKey',
    in: 'header',
    name: 'x-api-key',
    description: 'A local token in `x-api-key` (what styleB SDKs send).',
  },
} as const;

const ERROR_REF = { $ref: '#/components/responses/Error' };

const ERROR_ENVELOPE = {
  type: 'object',
  description: 'The one error envelope of every 4xx and 5xx the service itself answers (docs/api.md, Error envelope).',
  required: ['type', 'request_id', 'error'],
  additionalProperties: false,
  properties: {
    type: { const: 'error' },
    request_id: { type: 'string', pattern: '^req_[0-9A-HJKMNP-TV-Z]{26}$' },
    error: {
      type: 'object',
      required: ['code', 'message', 'type', 'param', 'messageKey', 'details'],
      additionalProperties: false,
      properties: {
        code: { enum: [...ERROR_CODES] },
        message: { type: 'string' },
        type: { type: 'string' },
        param: { type: ['string', 'null'] },
        messageKey: { type: 'string' },
        details: { type: 'object' },
      },
    },
  },
};

/**
 * A JSON copy without TypeBox's symbol keys (Kind, Optional, ...) and without `$id` / `$schema`: an `$id`
 * inside an OpenAPI document would rebase every `$ref` below it, and the document sets the dialect once.
 */
export function plainSchema(schema: unknown): unknown {
  if (Array.isArray(schema)) return schema.map(plainSchema);
  if (schema === null || typeof schema !== 'object') return schema;
  const out: Json = {};
  // Object.entries lists string keys only, so symbol keys stay behind.
  for (const [key, value] of Object.entries(schema)) {
    if (key === '$id' || key === '$schema') continue;
    out[key] = plainSchema(value);
  }
  return out;
}

/** `/v1/tokens/:id` -> `/v1/tokens/{id}` (the router's `:name` segments are OpenAPI's templates). */
export function openApiPath(path: string): string {
  return path.replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');
}

const pathParams = (path: string) => [...path.matchAll(/:([A-Za-z_][A-Za-z0-9_]*)/g)].map((m) => m[1]!);

const words = (s: string) => s.split(/[^A-Za-z0-9]+/).filter((w) => w !== '');
const cap = (w: string) => w.charAt(0).toUpperCase() + w.slice(1);

/** `GET /v1/tokens/:id` -> `getTokensById`; the `v1` is left out while that keeps IDs unique. */
function operationIds(routes: readonly DocumentedRoute[]): string[] {
  const taken = new Set<string>();
  return routes.map((r) => {
    const segs = r.path.split('/').filter((s) => s !== '');
    const name = (all: boolean) =>
      r.method.toLowerCase() +
      segs
        .filter((s, i) => all || i > 0 || s !== 'v1')
        .flatMap((s) => (s.startsWith(':') ? ['By', ...words(s.slice(1)).map(cap)] : words(s).map(cap)))
        .join('');
    let id = name(false);
    if (taken.has(id)) id = name(true);
    for (let n = 2; taken.has(id); n++) id = `${name(true)}${n}`;
    taken.add(id);
    return id;
  });
}

/** Any scope of the list, carried by any of the three headers: one alternative per pair. */
function security(scope: DocumentedRoute['scope']): Json[] {
  if (scope === 'public') return [];
  const scopes = typeof scope === 'string' ? [scope] : scope;
  return scopes.flatMap((s) => Object.keys(SCHEMES).map((scheme) => ({ [scheme]: [s] })));
}

const gatewayOpOf = (method: string, path: string) =>
  Object.entries(GATEWAY_OPS).find(([, op]) => op.method === method && op.path === path);

function gatewayBody(op: (typeof GATEWAY_OPS)[keyof typeof GATEWAY_OPS]): Json | null {
  if (op.body === 'none') return null;
  const schema = (kind: string) => ({
    type: 'object',
    description:
      `Provider-shaped: the ${op.family} request as the provider's own API defines it (docs/api.md, Gateway). ` +
      `The service reads \`model\` (a catalog model ID, a preset or a route pack) from the ${kind} and ` +
      `sends the upstream's own model ID in its place.`,
    properties: { model: { type: 'string' } },
    required: ['model'],
    additionalProperties: true,
  });
  const content: Json = {};
  if (op.body !== 'multipart') content['application/json'] = { schema: schema('JSON body') };
  if (op.body !== 'json') content['multipart/form-data'] = { schema: schema('`model` form field') };
  return { required: true, content };
}

function operation(r: DocumentedRoute, operationId: string): Json {
  const gateway = gatewayOpOf(r.method, r.path);
  const scopes = r.scope === 'public' ? [] : typeof r.scope === 'string' ? [r.scope] : [...r.scope];
  const op: Json = {
    operationId,
    tags: [gateway ? 'gateway' : tagOf(r.path)],
    security: security(r.scope),
    'x-scopes': scopes,
  };
  if (scopes.length > 0)
    op.description =
      `Needs a local token with scope ${scopes.map((s) => `\`${s}\``).join(' or ')} (\`admin\` holds ` +
      `every scope).`;
  const params: Json[] = pathParams(r.path).map((name) => ({
    name,
    in: 'path',
    required: true,
    schema: { type: 'string', minLength: 1 },
  }));
  for (const name of r.query ?? []) params.push({ name, in: 'query', required: false, schema: { type: 'string' } });
  if (params.length > 0) op.parameters = params;
  if (r.body)
    op.requestBody = { required: true, content: { 'application/json': { schema: plainSchema(r.body.Schema()) } } };
  if (gateway) {
    const [id, spec] = gateway;
    op['x-gateway-operation'] = id;
    op['x-endpoint-family'] = spec.family;
    const body = gatewayBody(spec);
    if (body) op.requestBody = body;
  }
  op.responses = {
    '2XX': {
      description: gateway
        ? "The provider's answer relayed as it came: JSON, an event stream when the request asks to stream, or " +
          'binary ' +
          'audio.'
        : 'Success; docs/api.md describes the answer.',
    },
    '4XX': ERROR_REF,
    '5XX': ERROR_REF,
  };
  return op;
}

/** `/v1/catalog/models/:id` -> `catalog`; root routes are `service`. */
function tagOf(path: string): string {
  const segs = path.split('/').filter((s) => s !== '');
  return segs[0] === 'v1' && segs[1] !== undefined ? segs[1] : 'service';
}

export function buildOpenApi(routes: readonly DocumentedRoute[], info: OpenApiInfo) {
  const ids = operationIds(routes);
  const paths: Record<string, Record<string, Json>> = {};
  routes.forEach((r, i) => {
    const item = (paths[openApiPath(r.path)] ??= {});
    item[r.method.toLowerCase()] = operation(r, ids[i]!);
  });
  const tags = [
    ...new Set(Object.values(paths).flatMap((item) => Object.values(item).map((op) => (op.tags as string[])[0]!))),
  ].sort();
  return {
    openapi: '3.1.0',
    info: {
      title: 'Switchyard',
      version: info.version,
      summary: 'A local AI gateway and control plane.',
      description:
        'Generated from the routes this service serves and the schemas it validates requests with. docs/api.md ' +
        'describes each answer.',
    },
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    tags: tags.map((name) => ({ name })),
    paths: Object.fromEntries(
      Object.keys(paths)
        .sort()
        .map((p) => [p, paths[p]!]),
    ),
    components: {
      securitySchemes: SCHEMES,
      schemas: { ErrorEnvelope: ERROR_ENVELOPE },
      responses: {
        Error: {
          description: 'An error, in the service’s error envelope.',
          content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorEnvelope' } } },
        },
      },
    },
  };
}

export type OpenApiDocument = ReturnType<typeof buildOpenApi>;
