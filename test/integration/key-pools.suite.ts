import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import * as openaiFake from '../fakes/openai.ts';
import { openLiveStream } from '../fakes/sse-client.ts';
import { inProcessDefaults, startInProcess, type InProcessService } from '../helpers/in-process.ts';

// Key pools (W4.2; docs/api.md, Key pools) with the official SDK against a fake account of three keys, each with its
// own request limit and rate-limit headers, 429 with retry-after past it, 401 once revoked. In the gateway family:
// again on two edge threads, which choose from one shared table.

const KEYS = { a: `pool-key-a-${process.pid}`, b: `pool-key-b-${process.pid}`, c: `pool-key-c-${process.pid}` };
const LIMITS = { [KEYS.a]: 320, [KEYS.b]: 240, [KEYS.c]: 160 };
/** Two keys of the same account added for the revocation test, when the first three may have run dry. */
const FRESH = [`pool-key-d-${process.pid}`, `pool-key-e-${process.pid}`];
const SESSIONS = 32;
const CALLS = 20;
let svc: InProcessService;
let oa: openaiFake.OpenAIFake;
let token: string;
const credentialOf = new Map<string, string>();

async function ok(method: string, path: string, body?: unknown, status = 200) {
  const reply = await svc.request(method, path, body === undefined ? {} : { body });
  assert.equal(reply.status, status, `${method} ${path}: ${reply.text}`);
  return reply.json;
}

const keyOf = (req: { headers: Record<string, unknown> }) => String(req.headers.authorization).replace('Bearer ', '');
const client = (session: string) =>
  new OpenAI({
    baseURL: `${svc.url}/v1`,
    apiKey: token,
    maxRetries: 0,
    defaultHeaders: { 'x-switchyard-session': session },
  });
const ask = { model: 'pool/gpt-pool', messages: [{ role: 'user' as const, content: 'hi' }], max_tokens: 16 };

before(async () => {
  oa = await openaiFake.start({
    keys: Object.fromEntries(
      [...Object.entries(LIMITS), ...FRESH.map((k) => [k, 50] as const)].map(([k, requests]) => [
        k,
        { requests, windowMs: 600_000 },
      ]),
    ),
  });
  oa.setModels([{ id: 'gpt-pool' }]);
  svc = await startInProcess();
  await ok('POST', '/v1/providers', { id: 'pool', kind: 'openai', baseUrl: oa.baseUrl, credential: KEYS.a }, 201);
  await ok(
    'POST',
    '/v1/catalog/models',
    { providerId: 'pool', upstreamModelId: 'gpt-pool', families: ['styleA.chat_completions'] },
    201,
  );
  for (const [label, key] of [
    ['b', KEYS.b],
    ['c', KEYS.c],
  ] as const)
    await ok('POST', '/v1/providers/pool/credentials', { label, credential: key }, 201);
  const keys = (await ok('GET', '/v1/providers/pool/credentials')).data as { id: string; label: string }[];
  for (const k of keys) credentialOf.set(k.label === 'default' ? KEYS.a : k.label === 'b' ? KEYS.b : KEYS.c, k.id);
  const created = await svc.request('POST', '/v1/tokens', { body: { name: 'pool', scopes: ['inference'] } });
  svc.markSecretBearing(created);
  token = created.json.secret;
});
after(async () => {
  await svc?.stop();
  await oa?.close();
});

/** The usage line of each request ID: which key served the call. */
const keyOfCall = () =>
  new Map(
    svc
      .logLines()
      .filter((l) => l.msg === 'usage')
      .map((l) => [String(l.reqId), l.credentialId === undefined ? null : String(l.credentialId)]),
  );

/**
 * What `read` gives once it gives something. The meter commits a quarter of a second behind, and on a busy machine
 * much later, so this waits up to 30 s (each try a request to the service, then a timer turn).
 */
async function until<T>(read: () => Promise<T | null>, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (let tries = 1; ; tries++) {
    const got = await read();
    if (got !== null) return got;
    if (Date.now() > end) throw new Error(`nothing after ${tries} reads in ${ms} ms`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** The key that served a call, once its usage line is written (that happens after the answer). */
async function keyOfRequest(reqId: string): Promise<string | null> {
  await svc.waitForLog((l) => l.msg === 'usage' && l.reqId === reqId, 30_000);
  return keyOfCall().get(reqId) ?? null;
}

describe('a key pool under load', () => {
  test('32 SDK sessions x 20 calls: no 429 while a key has room, each session keeps its key', async () => {
    const calls = new Map<string, string[]>();
    const failures: string[] = [];
    await Promise.all(
      Array.from({ length: SESSIONS }, async (_, s) => {
        const c = client(`agent-${s}`);
        const ids: string[] = [];
        calls.set(`agent-${s}`, ids);
        for (let i = 0; i < CALLS; i++) {
          try {
            const { response } = await c.chat.completions.create(ask).withResponse();
            ids.push(response.headers.get('x-request-id')!);
          } catch (err) {
            failures.push(String(err));
          }
        }
      }),
    );
    assert.deepEqual(failures, [], 'every call was answered: 720 of room for 640 calls');
    const { served, limited } = oa.keyLimits!;
    for (const [key, limit] of Object.entries(LIMITS)) assert.ok((served.get(key) ?? 0) <= limit, key);
    // Each call was served once (the keys also served the model list read when the provider was added).
    const chat = oa.requests.filter((r) => r.path.endsWith('/chat/completions')).length;
    assert.equal(chat - [...limited.values()].reduce((a, b) => a + b, 0), SESSIONS * CALLS);
    // Each session's calls by key, in order. A session keeps the key it first used while that key has room: 95 % of
    // its calls at least, but for a session whose key ran dry (429), which moves once and stays.
    await svc.waitForLog(() => keyOfCall().size >= SESSIONS * CALLS, 30_000);
    const byCall = keyOfCall();
    if (inProcessDefaults.edgeThreads === 2) {
      // Each thread counts the calls it served on /metrics: both did, so the counts below are merged ones.
      const isCall = (l: Record<string, unknown>) => l.msg === 'request' && byCall.has(String(l.reqId));
      await svc.waitForLog(() => svc.logLines().filter(isCall).length >= SESSIONS * CALLS, 30_000);
      const threads = new Set(
        svc
          .logLines()
          .filter(isCall)
          .map((l) => (l.edgeThread as number | undefined) ?? 0),
      );
      assert.deepEqual([...threads].sort(), [0, 1], 'both edge threads served calls');
    }
    const dry = new Set([...limited.keys()].map((k) => credentialOf.get(k)));
    for (const [session, ids] of calls) {
      const keys = ids.map((id) => byCall.get(id));
      assert.ok(
        keys.every((k) => typeof k === 'string'),
        `${session}: every call names its key`,
      );
      const first = keys[0]!;
      const kept = keys.filter((k) => k === first).length / keys.length;
      if (dry.has(first)) {
        const moves = keys.filter((k, i) => i > 0 && k !== keys[i - 1]).length;
        assert.ok(moves <= 2, `${session} moved ${moves} times: ${keys.join(' ')}`);
      } else assert.ok(kept >= 0.95, `${session} kept its key for ${kept}: ${keys.join(' ')}`);
    }
    // The breakdown by key and /metrics count what each key served, as the usage lines name it.
    const servedBy = new Map<string, number>();
    for (const k of byCall.values()) if (k !== null) servedBy.set(k, (servedBy.get(k) ?? 0) + 1);
    const expected = [...servedBy].sort();
    const rows = await until(async () => {
      const breakdown = await ok('GET', '/v1/usage/breakdown?groupBy=credential&providerId=pool');
      const got = (breakdown.data as { credentialId: string; requests: number }[])
        .map((r) => [r.credentialId, r.requests] as [string, number])
        .sort();
      return got.reduce((n, [, c]) => n + c, 0) >= SESSIONS * CALLS ? got : null;
    });
    assert.deepEqual(rows, expected);
    const scraped = await until(async () => {
      const text = (await svc.request('GET', '/metrics')).text;
      const counted = [
        ...text.matchAll(
          /^switchyard_credential_calls_total\{provider="pool",credential="(\w+)",outcome="ok"\} (\d+)$/gm,
        ),
      ]
        .map((m) => [m[1]!, Number(m[2])] as [string, number])
        .sort();
      return counted.reduce((n, [, c]) => n + c, 0) >= SESSIONS * CALLS ? { text, counted } : null;
    });
    assert.deepEqual(scraped.counted, expected);
    // Each key's state is one of four; a key that ran dry may still be cooling down.
    for (const id of credentialOf.values()) {
      const on = [
        ...scraped.text.matchAll(
          /^switchyard_credential_state\{provider="pool",credential="(\w+)",state="(\w+)"\} 1$/gm,
        ),
      ]
        .filter((m) => m[1] === id)
        .map((m) => m[2]);
      assert.deepEqual(on, dry.has(id) && on[0] === 'cooling' ? ['cooling'] : ['usable'], id);
    }
    const live = (await ok('GET', '/v1/providers/pool/credentials')).data as {
      id: string;
      headroom: { requests: { remaining: number; limit: number } | null } | null;
      sessions: number;
    }[];
    assert.equal(
      live.reduce((n, k) => n + k.sessions, 0),
      SESSIONS,
      'every session keeps one key',
    );
    for (const k of live) assert.ok(k.headroom?.requests?.limit !== undefined, 'the live headers are shown');
  });

  test('a key the upstream revokes (401) is set aside at once, announced, and the calls go on', async () => {
    const events = await openLiveStream({
      port: svc.port,
      path: '/v1/events',
      headers: { authorization: `Bearer ${svc.adminToken}` },
    });
    // Keys with room: the load above may have left the first three dry (cooling down), and a dry key's 429 would
    // move a call once more. The pool prefers them (nothing known of them yet).
    for (const [i, key] of FRESH.entries()) {
      const added = await ok('POST', '/v1/providers/pool/credentials', { label: `fresh-${i}`, credential: key }, 201);
      credentialOf.set(key, added.id);
    }
    // A session on a key, which then stops being valid upstream.
    const c = client('revoked-session');
    const before = await c.chat.completions.create(ask).withResponse();
    const keyA = await keyOfRequest(before.response.headers.get('x-request-id')!);
    const revoked = [...credentialOf].find(([, id]) => id === keyA)![0];
    oa.keyLimits!.revoke(revoked);
    const seen = oa.requests.length;
    for (let i = 0; i < 5; i++) await c.chat.completions.create(ask);
    // Chat calls only: setting the provider's first key aside also refreshes its model list with the next key.
    const after = oa.requests
      .slice(seen)
      .filter((r) => r.path.endsWith('/chat/completions'))
      .map(keyOf);
    assert.equal(after.filter((k) => k === revoked).length, 1, 'one call met the 401, and moved on');
    assert.equal(after.length, 6);
    for (let e = await events.next(); ; e = await events.next()) {
      assert.ok(e !== null, 'credential.rejected was announced');
      if (e.event === 'credential.rejected') {
        assert.deepEqual([e.data.providerId, e.data.credentialId, e.data.status], ['pool', keyA, 401]);
        break;
      }
    }
    events.close();
    const view = (await ok('GET', '/v1/providers/pool/credentials')).data.find((k: { id: string }) => k.id === keyA);
    assert.equal(view.rejected, true);
    assert.equal(JSON.stringify(svc.logLines()).includes(revoked), false, 'the key itself is never logged');
  });
});
