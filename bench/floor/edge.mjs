// The floor: the least a relay of Switchyard's design can do, measured beside it (bench/floor/README.md).
// A uWS edge on the main thread; each POST's body goes to a worker, whose answer is written back in one
// cork (a stream: one cork per call per turn). Long-lived ports, calls multiplexed by id, one message per
// worker per event-loop turn each way, bodies transferred. No auth, routing, logging, metering or header
// policy.
//
//   FLOOR_UPSTREAM=<port> FLOOR_WORKER=undici|switchyard|inline [FLOOR_THREADS=2] [FLOOR_EDGES=1] \
//     node bench/floor/edge.mjs
//
// FLOOR_EDGES=N: N edge threads on one port (the main thread and N-1 worker threads named edge-1..., each
// running this file with FLOOR_THREADS relay workers of its own; the kernel spreads connections over their
// listen sockets, SO_REUSEPORT), as Switchyard's SWITCHYARD_EDGE_THREADS is meant to.
// FLOOR_WORKER=undici: worker.mjs, undici's dispatch and nothing else.
// FLOOR_WORKER=inline: no worker; the same dispatch on the edge's thread (outside the design: no hop at all).
// FLOOR_WORKER=switchyard: Switchyard's own relay workers (dist/workers/proxy/relay-entry.js, `npm run build`
// first), each call a chat.completions RelayRequest to an openai_compatible target at the upstream.
// An event-stream answer (a request with `"stream":true`) is relayed as it is read: the head, then the
// chunks, one message per worker per turn as for whole answers.
// Prints {"port":N} once listening.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeFileSync } from 'node:fs';
import { isMainThread, parentPort, Worker, workerData as edgeData } from 'node:worker_threads';
import { relayCall } from './call.mjs';

const upstream = Number(process.env.FLOOR_UPSTREAM);
const kind = process.env.FLOOR_WORKER ?? 'undici';
const threads = Number(process.env.FLOOR_THREADS ?? 2);
const edges = Number(process.env.FLOOR_EDGES ?? 1);
// An edge thread names itself for bench/floor/thread-split.mjs (Linux; the main thread keeps the process's name).
if (!isMainThread) {
  try {
    writeFileSync('/proc/thread-self/comm', `edge-${edgeData.edge}`);
  } catch {}
}
if (!upstream || !['undici', 'switchyard', 'inline'].includes(kind))
  throw new Error('FLOOR_UPSTREAM=<port> and FLOOR_WORKER=undici|switchyard|inline');

// FLOOR_DIST: another build's dist/ (absolute path), to compare two builds' relay workers side by side.
const syDist = process.env.FLOOR_DIST
  ? new URL(`file://${process.env.FLOOR_DIST.replace(/\/?$/, '/')}`)
  : new URL('../../dist/', import.meta.url);
// The same native uWS build the service loads (dist/edge/http/uws-load.js picks the first that loads here), so
// the floor and Switchyard always run on one edge library.
const native = (await import(new URL('edge/http/uws-load.js', syDist).href)).loadNativeUws();
if (!('uws' in native)) throw new Error(`no native uWS build loads here: ${native.failures.join('; ')}`);
const uws = native.uws;
process.stderr.write(`floor: uWS ${native.build}\n`);
let makeStart;
let packBatch;
let unpackBatch;
let workers = [];
let inline = null;
if (kind === 'inline') {
  const { Pool } = await import('undici');
  // No connection cap, as in worker.mjs.
  const pool = new Pool(`http://127.0.0.1:${upstream}`, { connections: null });
  inline = (id, path, body) =>
    relayCall(pool, path, body, {
      whole: (status, bytes) => answer(id, status, bytes),
      head: (status) => head(id, status),
      data: (text) => data(id, text),
      end: () => end(id),
    });
} else if (kind === 'undici') {
  workers = Array.from(
    { length: threads },
    () => new Worker(new URL('./worker.mjs', import.meta.url), { workerData: { upstream } }),
  );
  // The body's own ArrayBuffer is transferred; a body gathered from several chunks may sit in Node's pool.
  const own = (b) =>
    b.byteOffset === 0 && b.byteLength === b.buffer.byteLength
      ? b.buffer
      : b.buffer.slice(b.byteOffset, b.byteOffset + b.byteLength);
  makeStart = (id, path, body) => ({ id, path, body: own(body) });
} else {
  const { createBodyArena } = await import(new URL('workers/shared/body-arena.js', syDist).href);
  ({ packBatch, unpackBatch } = await import(new URL('protocol/relay-batch.js', syDist).href));
  const arena = createBodyArena();
  const workerData = {
    dataDir: mkdtempSync(join(tmpdir(), 'switchyard-floor-')),
    arena: { buffer: arena.buffer, slotSize: arena.slotSize },
  };
  const entry = new URL('workers/proxy/relay-entry.js', syDist);
  // The relay pool's own worker options (workers/proxy/relay-pool.ts).
  workers = Array.from(
    { length: threads },
    () => new Worker(entry, { workerData, resourceLimits: { maxYoungGenerationSizeMb: 16 } }),
  );
  const target = {
    id: 'bench',
    kind: 'openai_compatible',
    baseUrl: `http://127.0.0.1:${upstream}/v1`,
    hints: {},
    timeouts: { connectMs: 10_000, headMs: 600_000, idleMs: 300_000 },
  };
  makeStart = (id, _path, body) => ({
    t: 'start',
    id,
    req: {
      op: 'chat.completions',
      target,
      credentialRef: null,
      credentialId: null,
      requestId: `req_${id}`,
      clientModel: 'bench-model',
      upstreamModelId: 'bench-model',
      params: {},
      query: '',
      headers: { accept: '*/*', 'content-type': 'application/json' },
      body: body.toString('utf8'),
      bodyStreamed: false,
    },
  });
}

const calls = new Map();
let nextId = 1;
let turn = 0;
const outboxes = workers.map(() => ({ messages: [], transfer: [] }));
let flushing = false;
function flush() {
  flushing = false;
  workers.forEach((worker, i) => {
    const box = outboxes[i];
    if (box.messages.length === 0) return;
    outboxes[i] = { messages: [], transfer: [] };
    // Switchyard's workers take a text batch (JSON and bodies) when nothing is transferred, as its relay pool
    // sends them.
    if (kind === 'switchyard') worker.postMessage(packBatch(box.messages));
    else worker.postMessage(box.messages, box.transfer);
  });
}

function answer(id, status, body) {
  const res = calls.get(id);
  calls.delete(id);
  if (res === undefined || res.gone) return;
  res.cork(() => {
    res.writeStatus(String(status));
    res.writeHeader('content-type', 'application/json');
    res.end(body);
  });
}

// A stream's head, chunks and end are gathered per call and written at the end of the event-loop turn, one
// cork (one send) per call per turn, as Switchyard's edge does. The fake upstream's streams are ASCII, so the
// latin1 chunks are written as the strings they are.
const pending = new Map();
let writing = false;
function pend(id) {
  let p = pending.get(id);
  if (p === undefined) {
    p = { status: 0, chunks: [], ended: false };
    pending.set(id, p);
    if (!writing) {
      writing = true;
      setImmediate(writePending);
    }
  }
  return p;
}
const head = (id, status) => (pend(id).status = status);
const data = (id, chunk) =>
  pend(id).chunks.push(typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString('latin1'));
const end = (id) => (pend(id).ended = true);

function writePending() {
  writing = false;
  for (const [id, p] of pending) {
    const res = calls.get(id);
    if (p.ended) calls.delete(id);
    if (res === undefined || res.gone) continue;
    res.cork(() => {
      if (p.status !== 0) {
        res.writeStatus(String(p.status));
        res.writeHeader('content-type', 'text/event-stream');
      }
      const text = p.chunks.join('');
      if (p.ended) res.end(text);
      else if (text.length > 0) res.write(text);
    });
  }
  pending.clear();
}

/** Switchyard's relay messages (protocol/relay.ts); a worker's arena `free` never comes for small bodies. */
function relayed(m) {
  if (m.t === 'whole') answer(m.id, m.status, m.body);
  else if (m.t === 'error') answer(m.id, 502, JSON.stringify(m.error));
  else if (m.t === 'head') head(m.id, m.status);
  else if (m.t === 'data' || m.t === 'end') {
    for (const chunk of m.chunks ?? []) data(m.id, chunk);
    if (m.t === 'end') end(m.id);
  }
}

for (const worker of workers) {
  worker.on('message', (message) => {
    const batch = kind === 'switchyard' && !Array.isArray(message) ? unpackBatch(message) : message;
    for (const m of batch) {
      if (kind === 'switchyard') relayed(m);
      else if (m.t === 'head') head(m.id, m.status);
      else if (m.t === 'data') data(m.id, m.text);
      else if (m.t === 'end') end(m.id);
      else answer(m.id, m.status, new Uint8Array(m.body));
    }
  });
}

/** The edge threads besides the main one (FLOOR_EDGES > 1). */
const edgeThreads = [];
const app = uws.App();
app.post('/*', (res, req) => {
  const path = req.getUrl();
  res.onAborted(() => (res.gone = true));
  const parts = [];
  res.onData((chunk, last) => {
    parts.push(Buffer.from(chunk.slice(0)));
    if (!last) return;
    const body = parts.length === 1 ? parts[0] : Buffer.concat(parts);
    const id = nextId++;
    calls.set(id, res);
    if (inline !== null) return inline(id, path, body);
    const k = turn++ % workers.length;
    const start = makeStart(id, path, body);
    outboxes[k].messages.push(start);
    if (kind === 'undici') outboxes[k].transfer.push(start.body);
    if (!flushing) {
      flushing = true;
      setImmediate(flush);
    }
  });
});
// uWS shares a port between threads (SO_REUSEPORT) only when it is given one, not for port 0: several edges
// take a free port first.
async function freePort() {
  const { createServer } = await import('node:net');
  const server = createServer();
  await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}
const listenPort = isMainThread ? (edges > 1 ? await freePort() : 0) : edgeData.port;
app.listen('127.0.0.1', listenPort, async (socket) => {
  if (!socket) throw new Error('cannot listen');
  const port = uws.us_socket_local_port(socket);
  if (!isMainThread) {
    parentPort.on('message', (m) => m === 'stop' && stopEdge(socket));
    return parentPort.postMessage('listening');
  }
  // The other edge threads listen on the same port before the port is printed.
  await Promise.all(
    Array.from({ length: edges - 1 }, (_, i) => {
      const edge = new Worker(new URL(import.meta.url), { workerData: { port, edge: i + 1 } });
      edgeThreads.push(edge);
      return new Promise((resolve, reject) => {
        edge.once('message', resolve);
        edge.once('error', reject);
      });
    }),
  );
  console.log(JSON.stringify({ port, edges }));
});
// An edge thread's uWS listen socket still open when the process exits fails Node's check that a worker's loop
// closes with no handle open (an abort, core and all): each edge thread closes its socket first.
function stopEdge(socket) {
  uws.us_listen_socket_close(socket);
  parentPort.postMessage('stopped');
}
async function stop() {
  const stopped = edgeThreads.map((edge) => new Promise((resolve) => edge.once('message', resolve)));
  for (const edge of edgeThreads) edge.postMessage('stop');
  await Promise.race([Promise.all(stopped), new Promise((resolve) => setTimeout(resolve, 1000))]);
  process.exit(0);
}
if (isMainThread) process.on('SIGTERM', stop);
