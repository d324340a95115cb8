import assert from 'node:assert/strict';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
} from 'node:fs';
import { createServer as createNetServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import { openLiveStream, type LiveStream, type WireEvent } from '../fakes/sse-client.ts';
import { addProvider } from '../helpers/gateway.ts';
import { writeTinyModel } from '../helpers/gguf.ts';
import { startService, tempHome, type Reply, type TestService } from '../helpers/service.ts';

// Supervised llama-server processes: a fake llama-server executable (test/fakes/llama-server, found on the
// service's PATH) is spawned with the tuning as flags, health-checked, restarted with backoff when it dies or
// stops answering, given up on when it never becomes healthy, stopped on request and on shutdown, and ended
// at the next start when a killed service left it running. A llamacpp provider reaches it at its URL.

const FAKES = fileURLToPath(new URL('../fakes/llama-server/', import.meta.url));
const TIMING = {
  backoffFirstMs: 100,
  backoffMaxMs: 400,
  healthEveryMs: 100,
  healthFailures: 2,
  stopGraceMs: 300,
  maxFailedStarts: 3,
};

let svc: TestService;
let home: string;
let records: string;
let events: LiveStream;
/** Every service.state event heard on GET /v1/events since the file began, in order. */
const heard: WireEvent[] = [];
let waiting: { match(e: WireEvent): boolean; resolve(e: WireEvent): void }[] = [];

function serviceEnv(): Record<string, string> {
  return {
    PATH: `${FAKES}${delimiter}${process.env.PATH ?? ''}`,
    FAKE_LLAMA_SERVER_RECORD: records,
    SWITCHYARD_SERVICE_TIMING: JSON.stringify(TIMING),
  };
}

async function listen(): Promise<void> {
  events = await openLiveStream({
    port: svc.port,
    path: '/v1/events?types=service.state',
    headers: { authorization: `Bearer ${svc.adminToken}` },
  });
  assert.equal(events.status, 200);
  void (async () => {
    for (let e = await events.next(); e !== null; e = await events.next()) {
      heard.push(e);
      waiting = waiting.filter((w) => (w.match(e) ? (w.resolve(e), false) : true));
    }
  })();
}

/** The first service.state event after `from` (an index into `heard`) that matches. */
function stateEvent(from: number, id: string, state: string): Promise<WireEvent> {
  const match = (e: WireEvent) => e.data.id === id && e.data.state === state;
  const found = heard.slice(from).find(match);
  if (found) return Promise.resolve(found);
  return new Promise((resolve) => waiting.push({ match: (e) => heard.indexOf(e) >= from && match(e), resolve }));
}

/** What the fake wrote at its start: argv and port, by pid. */
function started(pid: number): { argv: string[]; port: number; model: string } {
  return JSON.parse(readFileSync(join(records, `${pid}.json`), 'utf8'));
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

async function gone(pid: number): Promise<void> {
  for (let i = 0; i < 200 && alive(pid); i++) await new Promise((r) => setTimeout(r, 25));
  assert.equal(alive(pid), false, `process ${pid} is still running`);
}

function assertError(reply: Reply, status: number, code: string, param: string | null): void {
  assert.equal(reply.status, status, reply.text);
  assert.equal(reply.json.error.code, code, reply.text);
  assert.equal(reply.json.error.param, param, reply.text);
}

async function create(body: Record<string, unknown>): Promise<Reply> {
  const reply = await svc.request('POST', '/v1/services', { body });
  return reply;
}

before(async () => {
  home = tempHome();
  records = mkdtempSync(join(tmpdir(), 'switchyard-llama-records-'));
  const models = join(home, 'models');
  mkdirSync(models, { recursive: true });
  for (const name of ['normal', 'second', 'crash', 'wedge', 'stubborn', 'gone'])
    writeTinyModel(join(models, `${name}.gguf`));
  svc = await startService({ home, env: serviceEnv() });
  await listen();
});
after(async () => {
  events?.close();
  await svc?.stop();
  // Whatever a failed test left running is ended here, not left to the machine.
  for (const f of readdirSync(records)) {
    const pid = Number(f.replace('.json', ''));
    if (alive(pid)) process.kill(pid, 'SIGKILL');
  }
  rmSync(records, { recursive: true, force: true });
});

describe('services', () => {
  let normal: { id: string; port: number; url: string; pid: number };

  test('the embedded runtime is listed as a service that has no actions', async () => {
    const list = await svc.request('GET', '/v1/services');
    assert.equal(list.status, 200, list.text);
    assert.deepEqual(
      list.json.data.map((s: { id: string; kind: string; state: string; actions: string[]; loadedModels: number }) => [
        s.id,
        s.kind,
        s.state,
        s.actions,
        s.loadedModels,
      ]),
      [['embedded', 'embedded', 'running', [], 0]],
    );
    assertError(await svc.request('POST', '/v1/services/embedded/actions/restart'), 409, 'CONFLICT', 'id');
    assertError(await svc.request('DELETE', '/v1/services/embedded'), 409, 'CONFLICT', 'id');
    const caps = await svc.request('GET', '/v1/capabilities');
    assert.deepEqual(caps.json.actions.service, ['start', 'stop', 'restart']);
  });

  test('a created service starts with its tuning as llama-server flags and answers its health check', async () => {
    const made = await create({
      id: 'local',
      kind: 'llamacpp',
      model: 'normal.gguf',
      tuning: { contextSize: 512, threads: 2, gpuLayers: -1 },
      autoStart: false,
    });
    assert.equal(made.status, 201, made.text);
    assert.equal(made.json.state, 'stopped');
    assert.equal(made.json.desired, 'stopped');
    assert.deepEqual(made.json.binary, { name: 'llama-server', source: 'path' });
    assert.equal(made.json.url, `http://127.0.0.1:${made.json.port}`);
    const from = heard.length;
    const up = await svc.request('POST', '/v1/services/local/actions/start?wait=true');
    assert.equal(up.status, 200, up.text);
    assert.equal(up.json.state, 'running');
    assert.equal(up.json.desired, 'running');
    assert.equal(typeof up.json.pid, 'number');
    normal = { id: 'local', port: up.json.port, url: up.json.url, pid: up.json.pid };
    const argv = started(normal.pid).argv;
    assert.deepEqual(argv, [
      '--model',
      join(home, 'models', 'normal.gguf'),
      '--host',
      '127.0.0.1',
      '--port',
      String(normal.port),
      '--ctx-size',
      '512',
      '--threads',
      '2',
      '--n-gpu-layers',
      '0',
    ]);
    assert.deepEqual(
      [
        (await stateEvent(from, 'local', 'starting')).data.previous,
        (await stateEvent(from, 'local', 'running')).data.previous,
      ],
      ['stopped', 'starting'],
    );
    // A settings change reaches the process at its next start; the answer says what this one was given.
    const patched = await svc.request('PATCH', '/v1/settings', { body: { runtime: { tuning: { batchSize: 64 } } } });
    assert.equal(patched.status, 200, patched.text);
    const now = await svc.request('GET', '/v1/services/local');
    assert.deepEqual(now.json.tuning, { ...up.json.tuning, batchSize: 0 });
    assert.deepEqual(now.json.tuning, { contextSize: 512, threads: 2, gpuLayers: -1, parallel: 0, batchSize: 0 });
    // Answers name the binary, never where it or the model lives.
    for (const text of [made.text, up.text]) {
      assert.ok(!text.includes(home) && !text.includes(FAKES), text);
    }
  });

  test('a llamacpp provider at the service URL serves chat completions through the gateway', async () => {
    assert.equal(await addProvider(svc, { id: 'local-llama', kind: 'llamacpp', baseUrl: normal.url }), 1);
    const openai = new OpenAI({ baseURL: `${svc.url}/v1`, apiKey: svc.adminToken, maxRetries: 0 });
    const answer = await openai.chat.completions.create({
      model: 'local-llama/normal.gguf',
      messages: [{ role: 'user', content: 'hi' }],
    });
    assert.equal(answer.choices[0]!.message.content, `fake llama-server on port ${normal.port} answers`);
    const stream = await openai.chat.completions.create({
      model: 'local-llama/normal.gguf',
      messages: [{ role: 'user', content: 'hi' }],
      stream: true,
    });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    assert.equal(text.trim(), `fake llama-server on port ${normal.port} answers`);
  });

  test('a running llama-server holds its room in the scheduler until it stops; one that gets none fails', async () => {
    // `local` runs (the test above): the scheduler counts it, warm for as long as it runs.
    const held = await svc.request('GET', '/v1/runtime/residency');
    assert.equal(held.status, 200, held.text);
    const row = held.json.data.find((r: { unit: string }) => r.unit === 'local');
    assert.ok(row, held.text);
    assert.deepEqual([row.runtime, row.state, row.warm], ['llamacpp', 'resident', ['running']]);
    assert.ok(row.bytes > 0);
    assert.equal(held.json.memory.heldBytes, row.bytes);
    // A budget below what is held: a second llama-server cannot start, and is given up on with the reason.
    const tight = await svc.request('PATCH', '/v1/settings', {
      body: { runtime: { memoryBudgetBytes: row.bytes, loadWaitSeconds: 0 } },
    });
    assert.equal(tight.status, 200, tight.text);
    const from = heard.length;
    assert.equal((await create({ id: 'no-room', kind: 'llamacpp', model: 'second.gguf' })).status, 201);
    const failed = await stateEvent(from, 'no-room', 'failed');
    assert.equal(failed.data.lastExit.reason, 'memory_busy');
    assert.equal(
      readdirSync(records).filter((f) => started(Number(f.replace('.json', ''))).model === 'second.gguf').length,
      0,
    );
    const after = await svc.request('GET', '/v1/runtime/residency');
    assert.deepEqual(
      after.json.data.map((r: { unit: string }) => r.unit),
      ['local'],
    );
    assert.equal((await svc.request('DELETE', '/v1/services/no-room')).status, 200);
    const reset = await svc.request('PATCH', '/v1/settings', {
      body: { runtime: { memoryBudgetBytes: null, loadWaitSeconds: 30 } },
    });
    assert.equal(reset.status, 200, reset.text);
  });

  test('a process that dies is started again after a delay, with the exit said', async () => {
    const from = heard.length;
    process.kill(normal.pid, 'SIGKILL');
    const restarting = await stateEvent(from, 'local', 'restarting');
    assert.equal(restarting.data.restarts, 1);
    assert.deepEqual(
      { reason: restarting.data.lastExit.reason, signal: restarting.data.lastExit.signal },
      { reason: 'exited', signal: 'SIGKILL' },
    );
    assert.ok(Date.parse(restarting.data.nextStartAt) > Date.parse(restarting.data.lastExit.at));
    await stateEvent(from, 'local', 'running');
    const now = await svc.request('GET', '/v1/services/local');
    assert.equal(now.json.state, 'running');
    assert.equal(now.json.restarts, 1);
    assert.notEqual(now.json.pid, normal.pid);
    assert.equal(started(now.json.pid).port, normal.port);
    // Started again with the settings of now (batchSize was changed above).
    assert.deepEqual(started(now.json.pid).argv.slice(-2), ['--batch-size', '64']);
    assert.equal(now.json.tuning.batchSize, 64);
    normal.pid = now.json.pid;
  });

  test('restart is a job whose completion arrives on its event stream', async () => {
    const reply = await svc.request('POST', '/v1/services/local/actions/restart');
    assert.equal(reply.status, 202, reply.text);
    assert.deepEqual([reply.json.kind, reply.json.subject], ['start', 'local']);
    const stream = await openLiveStream({
      port: svc.port,
      path: `/v1/jobs/${reply.json.id}/events`,
      headers: { authorization: `Bearer ${svc.adminToken}` },
    });
    let last: WireEvent | null = null;
    for (let e = await stream.next(); e !== null; e = await stream.next()) last = e;
    assert.equal(last?.event, 'job.succeeded');
    assert.equal(last?.data.result.state, 'running');
    assert.equal(last?.data.result.restarts, 0);
    await gone(normal.pid);
    normal.pid = last?.data.result.pid;
  });

  test('a process that stops answering its health check is killed and started again', async () => {
    const from = heard.length;
    const made = await create({ id: 'wedged', kind: 'llamacpp', model: 'wedge.gguf' });
    assert.equal(made.status, 201, made.text);
    const restarting = await stateEvent(from, 'wedged', 'restarting');
    assert.equal(restarting.data.lastExit.reason, 'health_check_failed');
    assert.equal(restarting.data.previous, 'running');
    const stopped = await svc.request('POST', '/v1/services/wedged/actions/stop');
    assert.equal(stopped.status, 200, stopped.text);
    assert.equal(stopped.json.state, 'stopped');
  });

  test('a process that never becomes healthy is given up on after its backoff, and a start then fails', async () => {
    const from = heard.length;
    const made = await create({ id: 'crashing', kind: 'llamacpp', model: 'crash.gguf' });
    assert.equal(made.status, 201, made.text);
    const failed = await stateEvent(from, 'crashing', 'failed');
    assert.equal(failed.data.lastExit.reason, 'exited');
    assert.equal(failed.data.lastExit.code, 1);
    // Three starts: two delays between them, the second twice the first.
    const delays = heard
      .slice(from)
      .filter((e) => e.data.id === 'crashing' && e.data.state === 'restarting')
      .map((e) => Date.parse(e.data.nextStartAt) - Date.parse(e.data.lastExit.at));
    assert.equal(delays.length, 2);
    assert.ok(delays[0]! >= 90 && delays[0]! <= 150, String(delays));
    assert.ok(delays[1]! >= 190 && delays[1]! <= 250, String(delays));
    const again = await svc.request('POST', '/v1/services/crashing/actions/start?wait=true');
    assertError(again, 409, 'CONFLICT', null);
    assert.equal(again.json.error.details.reason, 'exited');
  });

  test('a process that ignores SIGTERM is killed after the grace period', async () => {
    const made = await create({ id: 'stubborn', kind: 'llamacpp', model: 'stubborn.gguf', autoStart: false });
    assert.equal(made.status, 201, made.text);
    const up = await svc.request('POST', '/v1/services/stubborn/actions/start?wait=true');
    assert.equal(up.status, 200, up.text);
    const stopped = await svc.request('POST', '/v1/services/stubborn/actions/stop');
    assert.equal(stopped.json.state, 'stopped');
    assert.equal(stopped.json.lastExit.signal, 'SIGKILL');
    assert.equal(alive(up.json.pid), false);
  });

  test('a configured binary that disappears fails the start with binary_missing', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-llama-bin-'));
    const binary = join(dir, 'llama-server');
    copyFileSync(join(FAKES, 'llama-server'), binary);
    chmodSync(binary, 0o755);
    try {
      // The copy runs the fake's server.mjs beside it: none there, so it must never be started.
      const made = await create({ id: 'configured', kind: 'llamacpp', model: 'gone.gguf', binary, autoStart: false });
      assert.equal(made.status, 201, made.text);
      assert.deepEqual(made.json.binary, { name: 'llama-server', source: 'configured' });
      assert.ok(!made.text.includes(dir));
      rmSync(binary);
      const start = await svc.request('POST', '/v1/services/configured/actions/start?wait=true');
      assertError(start, 409, 'CONFLICT', null);
      assert.equal(start.json.error.details.reason, 'binary_missing');
      assert.equal((await svc.request('GET', '/v1/services/configured')).json.state, 'failed');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test('a deleted service is stopped and forgotten', async () => {
    const made = await create({ id: 'short-lived', kind: 'llamacpp', model: 'second.gguf' });
    assert.equal(made.status, 201, made.text);
    const up = await svc.request('POST', '/v1/services/short-lived/actions/start?wait=true');
    assert.equal(up.status, 200, up.text);
    const units = async () =>
      (await svc.request('GET', '/v1/runtime/residency')).json.data.map((r: { unit: string }) => r.unit);
    assert.ok((await units()).includes('short-lived'), 'a running llama-server holds its room');
    const del = await svc.request('DELETE', '/v1/services/short-lived');
    assert.ok(!(await units()).includes('short-lived'), 'a stopped one gives it back');
    assert.deepEqual(del.json, { id: 'short-lived', deleted: true });
    assert.equal(alive(up.json.pid), false);
    assertError(await svc.request('GET', '/v1/services/short-lived'), 404, 'NOT_FOUND', 'id');
    const audit = await svc.request('GET', '/v1/audit-events?resourceType=service&resourceId=short-lived');
    assert.deepEqual(
      audit.json.data.map((e: { action: string }) => e.action),
      ['service.delete', 'service.start', 'service.create'],
    );
  });
});

describe('services: bad input', () => {
  test('bodies', async () => {
    assertError(await create({ kind: 'llamacpp' }), 400, 'INVALID_REQUEST', 'model');
    assertError(await create({ kind: 'embedded', model: 'normal.gguf' }), 400, 'INVALID_REQUEST', 'kind');
    assertError(
      await create({ kind: 'llamacpp', model: 'normal.gguf', flags: ['--rpc'] }),
      400,
      'INVALID_JSON',
      'flags',
    );
    assertError(await create({ id: 'Bad ID', kind: 'llamacpp', model: 'normal.gguf' }), 400, 'INVALID_REQUEST', 'id');
    assertError(await create({ kind: 'llamacpp', model: 'normal.gguf', port: 70_000 }), 400, 'INVALID_REQUEST', 'port');
    assertError(
      await create({ kind: 'llamacpp', model: 'normal.gguf', tuning: { contextSize: -1 } }),
      400,
      'INVALID_REQUEST',
      'tuning.contextSize',
    );
    assertError(
      await create({ kind: 'llamacpp', model: 'normal.gguf', tuning: { flashAttention: true } }),
      400,
      'INVALID_JSON',
      'tuning.flashAttention',
    );
    assertError(await create({ kind: 'llamacpp', model: 'absent.gguf' }), 404, 'NOT_FOUND', 'model');
    assertError(await create({ kind: 'llamacpp', model: '../../etc/passwd' }), 404, 'NOT_FOUND', 'model');
    assertError(
      await create({ kind: 'llamacpp', model: 'normal.gguf', binary: 'llama-server' }),
      400,
      'INVALID_REQUEST',
      'binary',
    );
    assertError(
      await create({ kind: 'llamacpp', model: 'normal.gguf', binary: '/bin/sh' }),
      400,
      'INVALID_REQUEST',
      'binary',
    );
    assertError(
      await create({ kind: 'llamacpp', model: 'normal.gguf', binary: '/nowhere/llama-server' }),
      400,
      'INVALID_REQUEST',
      'binary',
    );
    assertError(await create({ id: 'local', kind: 'llamacpp', model: 'normal.gguf' }), 409, 'CONFLICT', 'id');
    assertError(await create({ id: 'embedded', kind: 'llamacpp', model: 'normal.gguf' }), 409, 'CONFLICT', 'id');
    const taken = (await svc.request('GET', '/v1/services/local')).json.port;
    assertError(await create({ kind: 'llamacpp', model: 'normal.gguf', port: taken }), 409, 'CONFLICT', 'port');
    // Privileged ports, the service's own, and a port another program holds are refused before anything runs.
    assertError(await create({ kind: 'llamacpp', model: 'normal.gguf', port: 80 }), 400, 'INVALID_REQUEST', 'port');
    assertError(
      await create({ kind: 'llamacpp', model: 'normal.gguf', port: svc.port }),
      400,
      'INVALID_REQUEST',
      'port',
    );
    const holder = createNetServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    try {
      const held = (holder.address() as AddressInfo).port;
      assertError(await create({ kind: 'llamacpp', model: 'normal.gguf', port: held }), 409, 'CONFLICT', 'port');
    } finally {
      await new Promise((resolve) => holder.close(resolve));
    }
    // A link named llama-server that leads to a shell is not a llama-server.
    const dir = mkdtempSync(join(tmpdir(), 'switchyard-llama-link-'));
    try {
      symlinkSync('/bin/sh', join(dir, 'llama-server'));
      assertError(
        await create({ kind: 'llamacpp', model: 'normal.gguf', binary: join(dir, 'llama-server') }),
        400,
        'INVALID_REQUEST',
        'binary',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
    const bad = await svc.request('POST', '/v1/services', {
      body: '{"kind":',
      headers: { 'content-type': 'application/json' },
    });
    assertError(bad, 400, 'INVALID_JSON', null);
  });

  test('paths, queries and scopes', async () => {
    assertError(await svc.request('GET', '/v1/services/nope'), 404, 'NOT_FOUND', 'id');
    assertError(await svc.request('GET', `/v1/services/${'x'.repeat(5000)}`), 404, 'NOT_FOUND', 'id');
    assertError(await svc.request('POST', '/v1/services/local/actions/explode'), 400, 'INVALID_REQUEST', 'action');
    assertError(await svc.request('POST', '/v1/services/nope/actions/start'), 404, 'NOT_FOUND', 'id');
    assertError(
      await svc.request('POST', '/v1/services/local/actions/start?wait=maybe'),
      400,
      'INVALID_REQUEST',
      'wait',
    );
    assertError(await svc.request('GET', '/v1/services?limit=5'), 400, 'INVALID_REQUEST', 'limit');
    const reader = await svc.request('POST', '/v1/tokens', { body: { name: 'reader', scopes: ['read'] } });
    svc.markSecretBearing(reader);
    const asReader = { token: reader.json.secret as string };
    assert.equal((await svc.request('GET', '/v1/services', asReader)).status, 200);
    assertError(
      await svc.request('POST', '/v1/services', { ...asReader, body: { kind: 'llamacpp', model: 'normal.gguf' } }),
      403,
      'FORBIDDEN',
      null,
    );
    assertError(await svc.request('POST', '/v1/services/local/actions/stop', asReader), 403, 'FORBIDDEN', null);
    assertError(await svc.request('DELETE', '/v1/services/local', asReader), 403, 'FORBIDDEN', null);
  });
});

describe('services across restarts of the service', () => {
  test('shutdown stops every process; the next start starts the wanted ones again', async () => {
    const before = (await svc.request('GET', '/v1/services')).json.data as {
      id: string;
      pid: number | null;
      state: string;
    }[];
    const pids = before.filter((s) => s.pid !== null).map((s) => s.pid!);
    assert.deepEqual(
      before.filter((s) => s.state === 'running').map((s) => s.id),
      ['embedded', 'local'],
    );
    events.close();
    await svc.stop();
    for (const pid of pids) assert.equal(alive(pid), false, `process ${pid} outlived the service`);
    svc = await startService({ home, env: serviceEnv() });
    const up = await svc.request('POST', '/v1/services/local/actions/start?wait=true');
    assert.equal(up.status, 200, up.text);
    const states = Object.fromEntries(
      ((await svc.request('GET', '/v1/services')).json.data as { id: string; state: string }[]).map((s) => [
        s.id,
        s.state,
      ]),
    );
    // Stopped ones stay stopped; ones that were wanted are tried again (the crashing one fails again in its
    // own time; the configured binary is still missing).
    assert.ok(['starting', 'restarting', 'failed'].includes(states.crashing!), states.crashing);
    delete states.crashing;
    assert.deepEqual(states, {
      embedded: 'running',
      local: 'running',
      wedged: 'stopped',
      stubborn: 'stopped',
      configured: 'failed',
    });
  });

  test('a process left running by a killed service is ended at the next start, not doubled', async () => {
    const pid = (await svc.request('GET', '/v1/services/local')).json.pid as number;
    await svc.kill9();
    assert.equal(alive(pid), true, 'the llama-server outlives a SIGKILLed service');
    svc = await startService({ home, env: serviceEnv() });
    await gone(pid);
    const up = await svc.request('POST', '/v1/services/local/actions/start?wait=true');
    assert.equal(up.status, 200, up.text);
    assert.notEqual(up.json.pid, pid);
    const onItsPort = readdirSync(records)
      .map((f) => Number(f.replace('.json', '')))
      .filter((p) => alive(p) && started(p).port === up.json.port);
    assert.deepEqual(onItsPort, [up.json.pid]);
  });
});
