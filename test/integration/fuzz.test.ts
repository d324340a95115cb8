import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { request } from 'node:http';
import { after, before, test } from 'node:test';
import type { TSchema } from '@sinclair/typebox';
import { ERROR_TABLE, isErrorCode, messageKeyOf } from '../../protocol/errors.ts';
import { GATEWAY_OPS, type GatewayOp } from '../../protocol/gateway.ts';
import { AUDIT_QUERY_PARAMS } from '../../protocol/http/audit.ts';
import { GAUGE_ALERT_EVENTS_QUERY } from '../../protocol/http/gauge-alerts.ts';
import { USAGE_COMMON_PARAMS, USAGE_ROUTES } from '../../protocol/http/usage.ts';
import type { RouteDef } from '../../edge/http/router.ts';
import { auditRoutes } from '../../edge/routes/audit.ts';
import { capabilitiesRoute } from '../../edge/routes/capabilities.ts';
import { openapiRoute } from '../../edge/routes/openapi.ts';
import { dashboardRoutes } from '../../edge/routes/dashboard.ts';
import { catalogRoutes } from '../../edge/routes/catalog.ts';
import { gaugeRoutes } from '../../edge/routes/gauge.ts';
import { gaugeAuthSessionRoutes } from '../../edge/routes/gauge-auth-sessions.ts';
import { gaugeAlertRoutes } from '../../edge/routes/gauge-alerts.ts';
import { gaugeBudgetRoutes } from '../../edge/routes/gauge-budgets.ts';
import { gaugeInsightRoutes } from '../../edge/routes/gauge-insights.ts';
import { hardwareRoutes } from '../../edge/routes/hardware.ts';
import { jobRoutes } from '../../edge/routes/jobs.ts';
import { modelRoutes } from '../../edge/routes/models.ts';
import { presetRoutes } from '../../edge/routes/presets.ts';
import { processRoutes } from '../../edge/routes/process.ts';
import { metricsRoutes } from '../../edge/routes/metrics.ts';
import { providerCredentialRoutes } from '../../edge/routes/provider-credentials.ts';
import { providerRoutes } from '../../edge/routes/providers.ts';
import { routePackRoutes } from '../../edge/routes/route-packs.ts';
import { runtimeRoutes } from '../../edge/routes/runtime.ts';
import { residencyRoutes } from '../../edge/routes/runtime-residency.ts';
import { runtimeDiscoveryRoutes } from '../../edge/routes/runtime-discovery.ts';
import { placementRoutes } from '../../edge/routes/runtime-placement.ts';
import { settingsRoutes } from '../../edge/routes/settings.ts';
import { tokenRoutes } from '../../edge/routes/tokens.ts';
import { pairingRoutes } from '../../edge/routes/pairing.ts';
import { serviceAccountRoutes } from '../../edge/routes/service-accounts.ts';
import { serviceRoutes } from '../../edge/routes/services.ts';
import { logRoutes } from '../../edge/routes/logs.ts';
import { createLogTail } from '../../edge/http/log-tail.ts';
import { usageRoutes } from '../../edge/routes/usage.ts';
import { replayRoutes, requestLogRoutes } from '../../edge/routes/requests.ts';
import { REQUEST_LOG_QUERY } from '../../protocol/http/request-log.ts';
import { gatewayRoutes } from '../../edge/gateway/routes.ts';
import * as anthropicFake from '../fakes/anthropic.ts';
import * as openaiFake from '../fakes/openai.ts';
import {
  fromSchema,
  int,
  junkBodyText,
  junkQuery,
  junkSegment,
  junkValue,
  pick,
  prng,
  spoil,
  type Rng,
} from '../helpers/fuzz.ts';
import { startService, type TestService } from '../helpers/service.ts';

// W2.6 item 5: every route the service serves gets a bounded, seeded set of generated bodies, path segments
// and query strings. Whatever the input, the answer is never a 5xx, every non-2xx carries the whole error
// envelope, and the service is still up at the end. A failure lists each offending request exactly.

// Fixed, so the suite is repeatable; SWITCHYARD_FUZZ_SEED explores other inputs by hand.
const SEED = Number(process.env.SWITCHYARD_FUZZ_SEED ?? 0x5eed2606);
const KEY = `fake-openai-key-${process.pid}`;
let svc: TestService;
let oa: openaiFake.OpenAIFake;
let an: anthropicFake.AnthropicFake;
let inferenceToken = '';

// The route factories the families (service/families/*.ts) spread into the table, built over stubs:
// a factory only closes over its dependencies, so the definitions (method, path, body schema) are the real
// ones. `smartRoute.routes` is presetRoutes + routePackRoutes (service/smart-routing.ts).
const stub: never = new Proxy<object>(() => {}, {
  get: (_t, key): unknown => (key === 'then' ? undefined : stub),
  apply: (): unknown => stub,
}) as never;
const FACTORIES: Record<string, () => RouteDef[]> = {
  processRoutes: () => processRoutes(() => false, 'node:http'),
  dashboardRoutes: () => dashboardRoutes(),
  metricsRoutes: () => metricsRoutes(() => ''),
  settingsRoutes: () => settingsRoutes(stub),
  tokenRoutes: () => tokenRoutes(stub),
  serviceAccountRoutes: () => serviceAccountRoutes(stub),
  pairingRoutes: () => pairingRoutes(stub),
  auditRoutes: () => auditRoutes(stub),
  hardwareRoutes: () => hardwareRoutes(stub),
  jobRoutes: () => jobRoutes(stub),
  providerRoutes: () => providerRoutes(stub, stub, stub),
  providerCredentialRoutes: () => providerCredentialRoutes(stub),
  catalogRoutes: () => catalogRoutes(stub, stub),
  modelRoutes: () => modelRoutes(stub, stub),
  'smartRoute.routes': () => [...presetRoutes(stub), ...routePackRoutes(stub)],
  // service/gateway-wiring.ts: the gateway's routes as every thread wires them.
  gatewayRoutes: () =>
    gatewayRoutes({ catalog: stub, pool: stub, responses: stub, log: stub, spillDir: '/nonexistent', smart: stub }),
  usageRoutes: () => usageRoutes(stub),
  requestLogRoutes: () => requestLogRoutes(stub),
  replayRoutes: () => replayRoutes(stub),
  runtimeRoutes: () => runtimeRoutes(stub),
  residencyRoutes: () => residencyRoutes(stub),
  serviceRoutes: () => serviceRoutes(stub, stub),
  logRoutes: () => logRoutes(createLogTail()),
  placementRoutes: () => placementRoutes(stub),
  runtimeDiscoveryRoutes: () =>
    runtimeDiscoveryRoutes({ read: async () => ({ data: [], probedAt: new Date(0).toISOString() }) }),
  gaugeRoutes: () => gaugeRoutes(stub),
  gaugeAuthSessionRoutes: () => gaugeAuthSessionRoutes(stub),
  gaugeAlertRoutes: () => gaugeAlertRoutes(stub, stub),
  gaugeBudgetRoutes: () => gaugeBudgetRoutes(stub),
  gaugeInsightRoutes: () => gaugeInsightRoutes(stub),
  capabilitiesRoute: () => [capabilitiesRoute(() => [])],
  openapiRoute: () => [openapiRoute(() => [])],
};
const ROUTES: RouteDef[] = Object.values(FACTORIES).flatMap((f) => f());

const QUERY_NAMES = [
  ...new Set([
    'limit',
    'model',
    'after_id',
    'before_id',
    'family',
    'source',
    'hidden',
    'groupBy',
    'types',
    'wait',
    'kind',
    'offset',
    'after',
    ...AUDIT_QUERY_PARAMS,
    ...GAUGE_ALERT_EVENTS_QUERY,
    ...USAGE_COMMON_PARAMS,
    ...REQUEST_LOG_QUERY,
    ...Object.values(USAGE_ROUTES).flatMap((r) => r.params),
  ]),
];
const KNOWN_IDS = [
  'openai',
  'anthropic',
  'fz',
  'openai/gpt-test',
  'anthropic/claude-test',
  'load',
  'unload',
  'benchmark',
  'refresh-models',
  'test',
  'resp_1',
];

/** A valid body per gateway operation, with the model to spoil or replace. */
const GATEWAY_BODIES: Partial<Record<GatewayOp, Record<string, unknown>>> = {
  'chat.completions': { model: 'openai/gpt-test', messages: [{ role: 'user', content: 'hi' }], max_tokens: 5 },
  embeddings: { model: 'openai/text-embedding-test', input: 'hi' },
  'responses.create': { model: 'openai/gpt-test', input: 'hi' },
  'responses.input_tokens': { model: 'openai/gpt-test', input: 'hi' },
  'responses.compact': { model: 'openai/gpt-test', input: [{ role: 'user', content: 'hi' }] },
  'images.generations': { model: 'openai/gpt-image-test', prompt: 'a cat' },
  'audio.speech': { model: 'openai/tts-test', input: 'hi', voice: 'alloy' },
  'audio.transcriptions': { model: 'openai/whisper-test' },
  messages: { model: 'anthropic/claude-test', max_tokens: 5, messages: [{ role: 'user', content: 'hi' }] },
  'messages.count_tokens': { model: 'anthropic/claude-test', messages: [{ role: 'user', content: 'hi' }] },
  rerank: { model: 'openai/gpt-test', query: 'q', documents: ['a', 'b'] },
};
const MODEL_NAMES = [
  'openai/gpt-test',
  'anthropic/claude-test',
  '@preset/fz',
  '@route/nope',
  'nope',
  'openai/whisper-test',
];

// Cases per route where the default does not fit: a hardware refresh runs the probes (about 250 ms).
const CASES: Record<string, number> = { 'POST /v1/hardware/refresh': 3 };

interface Case {
  method: string;
  /** The route's pattern, e.g. `/v1/tokens/:id`. */
  route: string;
  path: string;
  body?: Buffer;
  contentType?: string;
  token: 'admin' | 'inference';
}

const opOf = (method: string, path: string) =>
  (Object.keys(GATEWAY_OPS) as GatewayOp[]).find(
    (op) => GATEWAY_OPS[op].method === method && GATEWAY_OPS[op].path === path,
  );

function jsonCase(rng: Rng, value: unknown): Pick<Case, 'body' | 'contentType'> {
  const contentType = pick(rng, [
    'application/json',
    'application/json',
    'application/json',
    'application/json; charset=utf-8',
    'text/plain',
    undefined,
  ]);
  return { body: Buffer.from(JSON.stringify(value) ?? 'null'), contentType };
}

function bodyFor(rng: Rng, r: RouteDef): Pick<Case, 'body' | 'contentType'> {
  const op = opOf(r.method, r.path);
  const schema = r.body?.Schema() as TSchema | undefined;
  const base = op ? GATEWAY_BODIES[op] : undefined;
  const roll = rng();
  if (op && GATEWAY_OPS[op].body.startsWith('multipart') && roll < 0.35) {
    const boundary = pick(rng, ['b0undary', '', '"q"', 'x'.repeat(100)]);
    const field = pick(rng, ['model', 'file', 'prompt', '']);
    const body =
      `--${boundary}\r\nContent-Disposition: form-data; ` +
      `name="${field}"\r\n\r\n${pick(rng, MODEL_NAMES)}\r\n${rng() < 0.5 ? `--${boundary}--\r\n` : ''}`;
    return { body: Buffer.from(body), contentType: `multipart/form-data; boundary=${boundary}` };
  }
  if (!schema && !base) {
    // Routes that take no body still get one now and then (the regression test below sends a large one).
    if (roll < 0.75) return {};
    const junk =
      roll < 0.9 ? jsonCase(rng, junkValue(rng)) : { body: junkBodyText(rng), contentType: 'application/json' };
    return { ...junk, body: junk.body!.subarray(0, 1024) };
  }
  const plausible = () => {
    if (!base) return fromSchema(rng, schema!);
    return { ...base, model: rng() < 0.7 ? base.model : pick(rng, MODEL_NAMES), ...(rng() < 0.2 && { stream: true }) };
  };
  if (base && roll < 0.08) {
    // A plausible call with one member nested thousands of levels deep, as text: the client's own
    // JSON.stringify could not write it. A member the fakes do not echo (they recurse, as a client would).
    const depth = int(rng, 3000, 10000);
    const call = { ...(plausible() as Record<string, unknown>), ...(rng() < 0.5 && { model: '@preset/fz' }) };
    const text = JSON.stringify(call).slice(0, -1) + `,"x_deep":${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}}`;
    return { body: Buffer.from(text), contentType: 'application/json' };
  }
  if (roll < 0.45) return jsonCase(rng, spoil(rng, plausible()));
  if (roll < 0.6) return jsonCase(rng, plausible());
  if (roll < 0.8) return jsonCase(rng, junkValue(rng));
  return { body: junkBodyText(rng), contentType: rng() < 0.9 ? 'application/json' : undefined };
}

function pathFor(rng: Rng, r: RouteDef): string {
  // Deletes and updates never name the fixtures: a provider re-pointed at a dead port would make later calls
  // fail with a rightful 502, and a deleted one would leave the gateway untested.
  const safe = r.method === 'DELETE' || r.method === 'PATCH' ? ['nope', 'resp_x'] : KNOWN_IDS;
  const segments = r.path
    .split('/')
    .map((s) => (s.startsWith(':') ? (rng() < 0.2 ? encodeURIComponent(pick(rng, safe)) : junkSegment(rng, safe)) : s));
  const tail = rng() < 0.04 ? pick(rng, ['/', '//', '/x', '%2F']) : '';
  return segments.join('/') + tail + (rng() < 0.6 ? junkQuery(rng, QUERY_NAMES) : '');
}

/** The cases of one route: `n` of them, a tenth with an inference-only token. */
function casesFor(rng: Rng, r: RouteDef, n: number): Case[] {
  return Array.from({ length: n }, () => ({
    method: r.method,
    route: r.path,
    path: pathFor(rng, r),
    ...bodyFor(rng, r),
    token: rng() < 0.1 ? 'inference' : 'admin',
  }));
}

interface Answer {
  status: number;
  requestId: string | undefined;
  text: string;
}

function send(c: Case): Promise<Answer> {
  const headers: Record<string, string> = {
    authorization: `Bearer ${c.token === 'admin' ? svc.adminToken : inferenceToken}`,
  };
  if (c.contentType !== undefined) headers['content-type'] = c.contentType;
  // Node's client frames a GET or DELETE body with nothing unless told: the bytes would be a next request.
  if (c.body !== undefined) headers['content-length'] = String(c.body.length);
  return new Promise((resolve, reject) => {
    const req = request(
      { host: '127.0.0.1', port: svc.port, method: c.method, path: c.path, headers, agent: false },
      (res) => {
        // An event stream (GET /v1/events) never ends by itself: its head is the answer.
        if (String(res.headers['content-type']).startsWith('text/event-stream')) {
          resolve({
            status: res.statusCode ?? 0,
            requestId: res.headers['x-service-request-id'] as string | undefined,
            text: '',
          });
          req.destroy();
          return;
        }
        const chunks: Buffer[] = [];
        res.on('data', (d: Buffer) => chunks.push(d));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            requestId: res.headers['x-service-request-id'] as string | undefined,
            text: Buffer.concat(chunks).toString('utf8'),
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(c.body);
  });
}

// The one 5xx a generated input may rightly get: a provider the fuzz itself created points at an address
// where nothing listens (`http://127.0.0.1:9/v1`, `https://example.test`), and its refresh or test says so.
const NOTHING_THERE = new Set(['UPSTREAM_UNREACHABLE', 'UPSTREAM_TIMEOUT']);

/** What is wrong with an answer, or null: a 5xx, or a non-2xx without the whole envelope. */
function fault(a: Answer): string | null {
  if (a.status < 300) return null;
  let json: { type?: unknown; request_id?: unknown; error?: Record<string, unknown> } | null;
  try {
    json = JSON.parse(a.text);
  } catch {
    return `status ${a.status} without an envelope`;
  }
  const e = json?.error;
  if (json?.type !== 'error' || typeof json.request_id !== 'string' || json.request_id !== a.requestId)
    return 'type/request_id missing or unlike the header';
  if (!e || !isErrorCode(e.code)) return 'no error.code from the table';
  if (Object.keys(e).sort().join() !== 'code,details,message,messageKey,param,type')
    return `error members are ${Object.keys(e).join()}`;
  if (
    typeof e.message !== 'string' ||
    e.message === '' ||
    e.type !== ERROR_TABLE[e.code].type ||
    e.messageKey !== messageKeyOf(e.code)
  )
    return 'message/type/messageKey wrong';
  if (
    !(e.param === null || typeof e.param === 'string') ||
    e.details === null ||
    typeof e.details !== 'object' ||
    Array.isArray(e.details)
  )
    return 'param/details wrong';
  return a.status >= 500 && !NOTHING_THERE.has(e.code) ? `status ${a.status} ${e.code}` : null;
}

const describeCase = (c: Case) =>
  `${c.method} ${c.path.length > 300 ? `${c.path.slice(0, 300)}... (${c.path.length} chars)` : c.path} [${c.token}] ` +
  `content-type=${c.contentType ?? '(none)'} body=${
    c.body === undefined
      ? '(none)'
      : c.body.length > 300
        ? `${JSON.stringify(c.body.toString('utf8', 0, 300))}... (${c.body.length} bytes)`
        : JSON.stringify(c.body.toString('utf8'))
  }`;

before(async () => {
  oa = await openaiFake.start({ apiKey: KEY });
  oa.setModels(['gpt-test', 'text-embedding-test', 'gpt-image-test', 'tts-test', 'whisper-test'].map((id) => ({ id })));
  an = await anthropicFake.start({ apiKey: KEY });
  an.setModels([{ id: 'claude-test', displayName: 'Claude Test', createdAt: '2026-01-01T00:00:00Z' }]);
  svc = await startService();
  for (const [kind, fake] of [
    ['openai', oa],
    ['anthropic', an],
  ] as const) {
    assert.equal(
      (await svc.request('POST', '/v1/providers', { body: { kind, baseUrl: fake.baseUrl, credential: KEY } })).status,
      201,
    );
    assert.equal((await svc.request('POST', `/v1/providers/${kind}/actions/refresh-models`)).status, 200);
  }
  const preset = await svc.request('POST', '/v1/presets', {
    body: {
      slug: 'fz',
      model: 'openai/gpt-test',
      parameters: { temperature: 0.5 },
      familyScope: ['styleA.chat_completions'],
    },
  });
  assert.equal(preset.status, 201, preset.text);
  const token = await svc.request('POST', '/v1/tokens', { body: { name: 'fuzz-inference', scopes: ['inference'] } });
  assert.equal(token.status, 201, token.text);
  svc.markSecretBearing(token);
  inferenceToken = token.json.secret;
});
after(async () => {
  await svc?.stop();
  await oa?.close();
  await an?.close();
});

test('the fuzzed route table is the one the families serve', async () => {
  // Each family (service/families/*.ts) lists its routes in `routes: () => [...]`; the root adds the two that list all.
  const dir = new URL('../../service/families/', import.meta.url);
  const spread = readdirSync(dir).flatMap((file) => {
    const source = readFileSync(new URL(file, dir), 'utf8');
    const start = source.indexOf('routes: () => [');
    if (start < 0) return [];
    // The table runs to the bracket that closes it.
    let depth = 0;
    let end = start + 'routes: () => '.length;
    do {
      if (source[end] === '[') depth++;
      else if (source[end] === ']') depth--;
      end++;
    } while (depth > 0 && end < source.length);
    // The spreads at the table's own level, not those inside an argument.
    const names: string[] = [];
    let level = 0;
    for (let i = start + 'routes: () => '.length; i < end; i++) {
      const c = source[i]!;
      if ('([{'.includes(c)) level++;
      else if (')]}'.includes(c)) level--;
      else if (level === 1 && source.startsWith('...', i))
        names.push(/^\.\.\.(?:p\.)?([\w.]+)/.exec(source.slice(i))![1]!);
    }
    return names;
  });
  const root = readFileSync(new URL('../../service/compose.ts', import.meta.url), 'utf8');
  const push = root.slice(root.indexOf('routes.push('), root.indexOf(');', root.indexOf('routes.push(')));
  const pushed = [...push.matchAll(/(\w+Route)\(/g)].map((m) => m[1]);
  assert.deepEqual([...spread, ...pushed].sort(), Object.keys(FACTORIES).sort());
  assert.ok(ROUTES.length >= 50, `${ROUTES.length} routes`);
  // Each definition is routed by the running service: neither "no route" nor "method not allowed".
  for (const r of ROUTES) {
    // Through `send`, which takes an event stream's head as its answer (GET /v1/events never ends).
    const path = r.path.replace(/:\w+/g, 'nope');
    const reply = await send({
      method: r.method,
      route: r.path,
      path,
      ...(r.method !== 'DELETE' && { body: Buffer.from('{}'), contentType: 'application/json' }),
      token: 'admin',
    });
    assert.ok(
      reply.status !== 405 && !/"message":"No route for/.test(reply.text),
      `${r.method} ${r.path}: ${reply.status} ${reply.text.slice(0, 200)}`,
    );
  }
});

test('fuzz: no route answers a generated input with a 5xx or without the whole error envelope', async () => {
  const rng = prng(SEED);
  // Reads and calls come before and after the writes (which may store odd values a read must cope with);
  // deletes come last, so the fixtures serve the rest.
  const phase = (c: Case, i: number) =>
    c.method === 'DELETE' ? 3 : c.method === 'GET' || opOf(c.method, c.route) ? 2 * (i % 2) : 1;
  const cases = ROUTES.flatMap((r) =>
    casesFor(rng, r, CASES[`${r.method} ${r.path}`] ?? (opOf(r.method, r.path) ? 50 : 30)),
  )
    .map((c, i) => ({ c, phase: phase(c, i) }))
    .sort((a, b) => a.phase - b.phase)
    .map(({ c }) => c);
  const faults: string[] = [];
  let next = 0;
  const worker = async () => {
    while (next < cases.length) {
      const c = cases[next++]!;
      const problem = await send(c).then(fault, (err: Error) => `no answer (${err.message})`);
      if (problem !== null) faults.push(`${problem}: ${describeCase(c)}`);
    }
  };
  await Promise.all(Array.from({ length: 4 }, worker));
  assert.deepEqual(
    faults.slice(0, 40),
    [],
    `${faults.length} of ${cases.length} generated requests failed (seed ${SEED})`,
  );
  const health = await svc.request('GET', '/health', { token: null });
  assert.equal(health.status, 200, 'the service is still up');
  assert.equal(svc.process.exitCode, null);
  const chat = await svc.request('POST', '/v1/chat/completions', { body: GATEWAY_BODIES['chat.completions'] });
  assert.equal(chat.status, 200, `a good call still works after the fuzz: ${chat.text.slice(0, 300)}`);
});

// Found by this fuzz: the answer of a route that reads no body must reach a client still sending one (W2.6
// item 8: the edge answers with Connection: close and reads the rest of the body away).
test('regression W2.6: a route that takes no body still answers when sent a 16 KB one', async () => {
  for (const [method, path] of [
    ['GET', '/health'],
    ['DELETE', '/v1/tokens/nope'],
  ] as const) {
    const answer = await send({
      method,
      route: path,
      path,
      body: Buffer.from(`[${'1,'.repeat(8000)}1]`),
      contentType: 'application/json',
      token: 'admin',
    });
    assert.equal(fault(answer), null);
    assert.equal(answer.status, method === 'GET' ? 200 : 404);
  }
});
