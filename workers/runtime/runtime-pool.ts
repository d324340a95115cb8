import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { ServiceError, type ErrorPayload } from '../../protocol/errors.ts';
import type { Tuning } from '../../protocol/http/settings.ts';
import type { FromWorker } from '../../protocol/relay.ts';
import type { RuntimeWorkerData, ToRuntime } from '../../protocol/runtime.ts';
import type { RelayPool, RelaySink } from '../proxy/relay-pool.ts';

// The edge's side of the embedded runtime: the same start/close contract as the proxy relay pool, served
// by one runtime worker thread that owns the loaded models. The worker starts on the first call (a service
// without embedded providers never pays for llama.cpp); if it dies, only its calls fail and the next call
// starts a new one.

export interface RuntimePoolOptions {
  dataDir: string;
  /** The settings value; null means `<dataDir>/models`. Read at every call. */
  modelsDirectory(): string | null;
  tuning(): Tuning;
  log: Logger;
}

/** Respawns closer together than this wait, so a worker that dies at once cannot spin the CPU. */
const RESPAWN_BACKOFF_MS = 1000;

export function defaultModelsDirectory(dataDir: string): string {
  return join(dataDir, 'models');
}

export function createRuntimePool(options: RuntimePoolOptions): RelayPool {
  const workerData: RuntimeWorkerData = { dataDir: options.dataDir };
  let worker: Worker | null = null;
  let inflight = new Map<number, RelaySink>();
  let nextId = 1;
  let closing = false;
  let lastSpawn = 0;
  let spawnWait: Promise<void> | null = null;

  function spawn(): Worker {
    const w = new Worker(new URL('./runtime-entry.js', import.meta.url), { workerData });
    const mine = new Map<number, RelaySink>();
    inflight = mine;
    worker = w;
    lastSpawn = Date.now();
    w.unref();
    w.on('message', (m: FromWorker) => {
      const sink = mine.get(m.id);
      if (!sink) return;
      switch (m.t) {
        case 'whole':
          mine.delete(m.id);
          sink.whole(m.status, m.headers, m.body, m.end);
          return;
        case 'head':
          sink.head(m.status, m.headers);
          return;
        case 'data':
          sink.data(m.chunks);
          return;
        case 'end':
          mine.delete(m.id);
          sink.end(m.end);
          return;
        case 'error':
          mine.delete(m.id);
          sink.error(ServiceError.fromPayload(m.error as ErrorPayload), m.usage);
          return;
        case 'ack':
        case 'created':
          return;
      }
    });
    let gone = false;
    const lost = (reason: unknown) => {
      if (gone) return;
      gone = true;
      if (!closing) options.log.warn({ inflight: mine.size, reason: String(reason).slice(0, 200) }, 'the embedded runtime worker stopped');
      for (const sink of mine.values()) {
        sink.error(new ServiceError('UPSTREAM_ERROR', 'The embedded runtime stopped during the request.'), null);
      }
      mine.clear();
      if (worker === w) worker = null;
    };
    w.on('error', lost);
    w.on('exit', lost);
    return w;
  }

  /** The live worker, starting one when there is none (after a pause if the last one died young). */
  async function live(): Promise<Worker> {
    while (!worker) {
      const wait = lastSpawn + RESPAWN_BACKOFF_MS - Date.now();
      if (lastSpawn === 0 || wait <= 0) return spawn();
      spawnWait ??= new Promise<void>((r) => setTimeout(r, wait)).finally(() => (spawnWait = null));
      await spawnWait;
    }
    return worker;
  }

  return {
    start(req, sink) {
      const id = nextId++;
      let aborted = false;
      let target: { w: Worker; map: Map<number, RelaySink> } | null = null;
      const config = {
        modelsDirectory: options.modelsDirectory() ?? defaultModelsDirectory(options.dataDir),
        tuning: { ...options.tuning() },
      };
      void live().then((w) => {
        if (aborted || closing) return;
        target = { w, map: inflight };
        inflight.set(id, sink);
        const m: ToRuntime = { t: 'start', id, req, config };
        w.postMessage(m, req.body ? [req.body] : []);
      });
      const send = (m: ToRuntime) => target?.w.postMessage(m);
      return {
        // Embedded calls carry their whole body; there is no streamed upload or upstream socket to pace.
        body: () => undefined,
        pause: () => undefined,
        resume: () => undefined,
        abort() {
          aborted = true;
          if (target?.map.delete(id)) send({ t: 'abort', id });
        },
      };
    },
    async close() {
      closing = true;
      await worker?.terminate();
    },
  };
}

/**
 * The gateway's pool: `embedded` providers' calls go to the runtime, every other kind to the proxy relay.
 * One place decides, so the gateway routes stay free of kind checks.
 */
export function withEmbeddedRuntime(relay: RelayPool, runtime: RelayPool): RelayPool {
  return {
    start: (req, sink) => (req.target.kind === 'embedded' ? runtime : relay).start(req, sink),
    close: async () => {
      await Promise.all([relay.close(), runtime.close()]);
    },
  };
}
