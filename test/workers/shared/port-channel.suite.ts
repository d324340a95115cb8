import assert from 'node:assert/strict';
import { MessageChannel, Worker } from 'node:worker_threads';
import { afterEach, it } from 'node:test';
import { ServiceError } from '../../../protocol/errors.ts';
import { portClient, servePorts, type PortClient, type PortServer } from '../../../workers/shared/port-channel.ts';

interface Notes {
  add(text: string, at: Date): Promise<{ id: number; text: string; at: Date }>;
  count(): number | Promise<number>;
  get(id: number): { id: number; text: string };
  fail(kind: string): Promise<never>;
  leak(): unknown;
}

const open: (PortClient | PortServer)[] = [];
afterEach(() => {
  for (const end of open.splice(0)) end.close();
});

function notes() {
  const kept: { id: number; text: string }[] = [];
  const target = {
    async add(text: string, at: Date) {
      kept.push({ id: kept.length + 1, text });
      return { id: kept.length, text, at };
    },
    count: () => kept.length,
    get(id: number) {
      const n = kept[id - 1];
      if (n === undefined) throw new ServiceError('NOT_FOUND', `No note ${id}.`, { param: 'id', details: { id } });
      return n;
    },
    async fail(kind: string): Promise<never> {
      if (kind === 'type') throw new TypeError('a bug in the control plane');
      throw new ServiceError('CONFLICT', 'Taken.', { headers: { 'retry-after': '3' }, status: 409 });
    },
    leak: () => ({ callback: () => 1 }),
    secret: () => 'never served',
  };
  const { port1, port2 } = new MessageChannel();
  const server = servePorts(port1, {
    notes: { target, methods: ['add', 'count', 'get', 'fail', 'leak'] satisfies (keyof Notes)[] },
  });
  const client = portClient(port2);
  open.push(client, server);
  return { client, remote: client.remote<Notes>('notes', ['add', 'count', 'get', 'fail', 'leak']) };
}

it('answers each listed method with its value, sync or async, cloned (a Date stays a Date)', async () => {
  const { remote } = notes();
  const at = new Date('2026-11-27T12:00:00Z');
  const [a, b] = await Promise.all([remote.add('one', at), remote.add('two', at)]);
  assert.deepEqual([a.id, b.id], [1, 2]);
  assert.ok(a.at instanceof Date && a.at.getTime() === at.getTime());
  assert.equal(await remote.count(), 2);
  assert.deepEqual(await remote.get(2), { id: 2, text: 'two' });
});

it('a ServiceError crosses whole; any other error keeps its name and message', async () => {
  const { remote } = notes();
  await assert.rejects(Promise.resolve(remote.get(9)), (err: unknown) => {
    assert.ok(err instanceof ServiceError);
    assert.deepEqual(
      [err.code, err.status, err.message, err.param, err.details],
      ['NOT_FOUND', 404, 'No note 9.', 'id', { id: 9 }],
    );
    return true;
  });
  await assert.rejects(remote.fail('conflict'), (err: unknown) => {
    assert.ok(err instanceof ServiceError);
    assert.deepEqual([err.code, err.headers], ['CONFLICT', { 'retry-after': '3' }]);
    return true;
  });
  await assert.rejects(remote.fail('type'), (err: unknown) => {
    assert.ok(!(err instanceof ServiceError));
    assert.deepEqual([(err as Error).name, (err as Error).message], ['TypeError', 'a bug in the control plane']);
    return true;
  });
});

it('an answer or an argument that cannot be cloned fails the call instead of leaving it waiting', async () => {
  const { remote } = notes();
  await assert.rejects(Promise.resolve(remote.leak()), /The answer could not cross/);
  await assert.rejects(remote.add('x', (() => 1) as unknown as Date), /could not be cloned/);
  // The channel still serves after both.
  assert.equal(await remote.count(), 0);
});

it('serves only the methods listed for a port, and only the ports it was given', async () => {
  const { client } = notes();
  const hidden = client.remote<{ secret(): string }>('notes', ['secret']);
  await assert.rejects(Promise.resolve(hidden.secret()), /No method notes\.secret is served/);
  const unknown = client.remote<{ count(): number }>('other', ['count']);
  await assert.rejects(Promise.resolve(unknown.count()), /No method other\.count is served/);
  const inherited = client.remote<{ toString(): string }>('toString', ['toString']);
  await assert.rejects(Promise.resolve(inherited.toString()), /is served/);
});

it('closing the client fails the calls still waiting with OVERLOADED, and every later one', async () => {
  const { port1, port2 } = new MessageChannel();
  let release!: () => void;
  const server = servePorts(port1, {
    slow: { target: { wait: () => new Promise<void>((r) => (release = r)) }, methods: ['wait'] },
  });
  const client = portClient(port2);
  open.push(server);
  const remote = client.remote<{ wait(): Promise<void> }>('slow', ['wait']);
  const waiting = remote.wait();
  // The call has reached the server once it holds the resolver (a message crosses within a few turns).
  for (let turn = 0; release === undefined && turn < 1000; turn++) await new Promise((r) => setImmediate(r));
  assert.ok(release !== undefined, 'the call never reached the server');
  client.close();
  await assert.rejects(waiting, (err: unknown) => err instanceof ServiceError && err.code === 'OVERLOADED');
  await assert.rejects(remote.wait(), (err: unknown) => err instanceof ServiceError && err.code === 'OVERLOADED');
  release();
});

it('works across threads: a worker calls a port served on this one', async () => {
  const { port1, port2 } = new MessageChannel();
  open.push(servePorts(port1, { math: { target: { twice: (n: number) => n * 2 }, methods: ['twice'] } }));
  const source = `
    const { workerData, parentPort } = require('node:worker_threads');
    const { port } = workerData;
    let id = 0;
    port.on('message', (a) => { parentPort.postMessage(a); port.close(); });
    port.postMessage({ id: ++id, port: 'math', method: 'twice', args: [21] });
  `;
  const worker = new Worker(source, { eval: true, workerData: { port: port2 }, transferList: [port2] });
  const answer = await new Promise((resolve, reject) => {
    worker.once('message', resolve);
    worker.once('error', reject);
  });
  assert.deepEqual(answer, { id: 1, value: 42 });
  await worker.terminate();
});
