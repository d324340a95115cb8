import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { openLiveStream, type LiveStream, type WireEvent } from '../fakes/sse-client.ts';
import { writeTinyModel } from '../helpers/gguf.ts';
import { startInProcess, type InProcessService } from '../helpers/in-process.ts';
import { tempHome } from '../helpers/service.ts';

// The local-model scheduler from outside (W4.8, docs/api.md "Local-model scheduler"): three tiny models, a
// budget that holds two, each with an agent session. A load that would evict a model in use waits or gets 503
// with retry-after; the idle model past its keep-alive is the one evicted; a pin holds, across a restart too.
// Every wait below is for an answer or an event of the service, each under a deadline: no call may hang.

const A = 'embedded/a.gguf';
const B = 'embedded/b.gguf';
const C = 'embedded/c.gguf';
const DEADLINE_MS = 15_000;

let home: string;
let svc: InProcessService;
let client: OpenAI;
let events: LiveStream;

const within = <T>(what: string, p: Promise<T>): Promise<T> => {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer in ${DEADLINE_MS} ms (a hang)`)), DEADLINE_MS);
  });
  return Promise.race([p, late]).finally(() => clearTimeout(timer));
};

const chat = (model: string, session: string | null) =>
  within(
    `chat ${model}`,
    client.chat.completions.create(
      { model, max_tokens: 2, messages: [{ role: 'user', content: 'Hi' }] },
      session === null ? {} : { headers: { 'x-session-id': session } },
    ),
  );

async function nextOf(type: string): Promise<WireEvent> {
  for (;;) {
    const e = await within(`event ${type}`, events.next());
    assert.ok(e !== null, `the event stream ended before ${type}`);
    if (e.event === type) return e;
  }
}

const residency = async () => {
  const r = await svc.request('GET', '/v1/runtime/residency');
  assert.equal(r.status, 200, r.text);
  return r.json as {
    memory: { budgetBytes: number; heldBytes: number; queued: number; budgetSource: string };
    data: { modelIds: string[]; bytes: number; warm: string[]; pinned: boolean; state: string }[];
    prefs: unknown[];
  };
};
const rowOf = async (id: string) => (await residency()).data.find((r) => r.modelIds.includes(id));
const settings = (runtime: Record<string, unknown>) =>
  svc.request('PATCH', '/v1/settings', { body: { runtime } }).then((r) => assert.equal(r.status, 200, r.text));

async function start(): Promise<void> {
  svc = await startInProcess({ home });
  client = new OpenAI({ baseURL: `${svc.url}/v1`, apiKey: svc.adminToken, maxRetries: 0 });
  events = await openLiveStream({
    port: svc.port,
    path: '/v1/events?types=model.evicted,model.load_queued',
    headers: { authorization: `Bearer ${svc.adminToken}` },
  });
}

before(async () => {
  home = tempHome();
  const models = join(home, 'models');
  mkdirSync(models, { recursive: true });
  for (const [name, seed] of [
    ['a.gguf', 1],
    ['b.gguf', 2],
    ['c.gguf', 3],
  ] as const)
    writeTinyModel(join(models, name), { seed });
  await start();
  await settings({ tuning: { contextSize: 256, threads: 1, parallel: 1 } });
});
after(async () => {
  events?.close();
  await svc?.stop();
});

describe('two models that cannot both fit with a third, each with a session', () => {
  let bytes = 0;

  test('a load that fits takes its estimate from the budget; with a session the model stays warm', async () => {
    await chat(A, 'agent-a');
    const row = await rowOf(A);
    assert.ok(row, 'A is resident');
    assert.deepEqual(row.warm, ['session']);
    bytes = row.bytes;
    assert.ok(bytes > 0);
    // Room for two of the three (the tiny models are the same size).
    await settings({ memoryBudgetBytes: Math.floor(bytes * 2.5), loadQueueSize: 0 });
    await chat(B, 'agent-b');
    const r = await residency();
    assert.deepEqual(r.memory, {
      budgetBytes: Math.floor(bytes * 2.5),
      heldBytes: 2 * bytes,
      queued: 0,
      budgetSource: 'setting',
    });
  });

  test('a third load that cannot wait gets 503 MODEL_MEMORY_BUSY with retry-after, and evicts nothing', async () => {
    await assert.rejects(chat(C, 'agent-c'), (err: InstanceType<typeof OpenAI.APIError>) => {
      assert.equal(err.status, 503);
      assert.equal((err.error as { code?: string }).code, 'MODEL_MEMORY_BUSY');
      const retry = Number(err.headers?.get('retry-after'));
      // The sessions keep A and B warm for runtime.keepAliveSeconds (300): the sooner goes cold within it.
      assert.ok(retry > 0 && retry <= 300, `retry-after ${retry}`);
      return true;
    });
    assert.deepEqual((await residency()).data.flatMap((r) => r.modelIds).sort(), [A, B]);
  });

  test('a load that may wait waits until the idle model passes its keep-alive, and only that one goes', async () => {
    // A's own keep-alive: 1 s after agent-a's last call, this one, it is cold; B stays in agent-b's session.
    await chat(A, 'agent-a');
    const patched = await svc.request('PATCH', `/v1/runtime/residency/${encodeURIComponent(A)}`, {
      body: { keepAliveSeconds: 1 },
    });
    assert.equal(patched.status, 200, patched.text);
    assert.deepEqual(patched.json.prefs, { modelId: A, pinned: false, keepAliveSeconds: 1 });
    await settings({ loadQueueSize: 4, loadWaitSeconds: 30 });
    const answer = chat(C, 'agent-c');
    assert.deepEqual((await nextOf('model.load_queued')).data, { modelId: C, position: 1 });
    assert.deepEqual((await nextOf('model.evicted')).data, { modelId: A, reason: 'memory' });
    await answer;
    const r = await residency();
    assert.deepEqual(r.data.flatMap((x) => x.modelIds).sort(), [B, C]);
    assert.equal(r.memory.heldBytes, 2 * bytes);
    // Back to the default: the runtime would otherwise unload A 1 s after each of its calls.
    const reset = await svc.request('PATCH', `/v1/runtime/residency/${encodeURIComponent(A)}`, {
      body: { keepAliveSeconds: null },
    });
    assert.deepEqual(reset.json.prefs, { modelId: A, pinned: false, keepAliveSeconds: null });
  });

  test('/metrics counts the loads, the eviction and the held memory exactly', async () => {
    const text = (await svc.request('GET', '/metrics')).text;
    const value = (series: string) => {
      const line = text.split('\n').find((l) => l.startsWith(`${series} `));
      return line === undefined ? undefined : Number(line.slice(series.length + 1));
    };
    assert.equal(value('switchyard_model_loads_total{runtime="embedded"}'), 3);
    assert.equal(value('switchyard_model_evictions_total{runtime="embedded",reason="memory"}'), 1);
    assert.equal(value('switchyard_model_memory_held_bytes'), 2 * bytes);
    assert.equal(value('switchyard_model_memory_budget_bytes'), Math.floor(bytes * 2.5));
    assert.equal(value('switchyard_model_load_queue_length'), 0);
    assert.equal(value('switchyard_model_load_queue_wait_seconds_count'), 1);
  });

  test('a pinned model is never evicted, also after a restart; the cold one is', async () => {
    const pin = await svc.request('PATCH', `/v1/runtime/residency/${encodeURIComponent(B)}`, {
      body: { pinned: true },
    });
    assert.equal(pin.status, 200, pin.text);
    // Resident when pinned: the runtime's idle timer, armed by its last call, is stopped at once.
    const loaded = (await svc.request('GET', '/v1/runtime/loaded')).json.data;
    assert.equal(loaded.find((m: { modelId: string }) => m.modelId === B).expiresAt, null);
    events.close();
    await svc.stop();
    await start();
    const stored = await svc.request('GET', `/v1/runtime/residency/${encodeURIComponent(B)}`);
    assert.deepEqual(stored.json, { prefs: { modelId: B, pinned: true, keepAliveSeconds: null }, resident: null });
    // Calls without a session: nothing but the pin keeps either model warm once its call ends.
    await chat(B, null);
    await chat(C, null);
    assert.deepEqual((await rowOf(B))?.warm, ['pinned']);
    assert.deepEqual((await rowOf(C))?.warm, []);
    await chat(A, null);
    const evicted = await nextOf('model.evicted');
    assert.deepEqual(evicted.data, { modelId: C, reason: 'memory' });
    assert.deepEqual((await residency()).data.flatMap((x) => x.modelIds).sort(), [A, B]);
  });

  test('GET /v1/runtime/loaded says why each model is resident', async () => {
    const loaded = await svc.request('GET', '/v1/runtime/loaded');
    assert.equal(loaded.status, 200, loaded.text);
    const b = loaded.json.data.find((m: { modelId: string }) => m.modelId === B);
    assert.equal(b.resident.pinned, true);
    assert.deepEqual(b.resident.warm, ['pinned']);
    assert.equal(loaded.json.memory.heldBytes, loaded.json.data.length * bytes);
  });
});

describe('residency routes refuse bad input', () => {
  const patch = (id: string, body: unknown) =>
    svc.request('PATCH', `/v1/runtime/residency/${encodeURIComponent(id)}`, { body });

  test('bodies, IDs and queries: 4xx with the field named, nothing stored', async () => {
    const before = (await residency()).prefs;
    const cases: [
      Promise<{ status: number; json: { error: { code: string; param: string | null } } }>,
      number,
      string,
      string | null,
    ][] = [
      [patch(A, {}), 400, 'INVALID_REQUEST', null],
      [patch(A, { pinned: 'yes' }), 400, 'INVALID_REQUEST', 'pinned'],
      [patch(A, { keepAliveSeconds: -2 }), 400, 'INVALID_REQUEST', 'keepAliveSeconds'],
      [patch(A, { keepAliveSeconds: 604_801 }), 400, 'INVALID_REQUEST', 'keepAliveSeconds'],
      [patch(A, { keepAliveSeconds: 1.5 }), 400, 'INVALID_REQUEST', 'keepAliveSeconds'],
      [patch(A, { pinned: true, extra: 1 }), 400, 'INVALID_JSON', 'extra'],
      [patch(A, [true]), 400, 'INVALID_REQUEST', null],
      [patch('embedded/none.gguf', { pinned: true }), 404, 'NOT_FOUND', 'id'],
      [patch('x'.repeat(5000), { pinned: true }), 400, 'INVALID_REQUEST', 'id'],
      [svc.request('GET', '/v1/runtime/residency?all=1'), 400, 'INVALID_REQUEST', 'all'],
    ];
    for (const [reply, status, code, param] of cases) {
      const r = await reply;
      assert.deepEqual([r.status, r.json.error.code, r.json.error.param], [status, code, param]);
    }
    assert.deepEqual((await residency()).prefs, before);
  });
});
