import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { Logger } from 'pino';
import { ServiceError, type ErrorPayload } from '../../protocol/errors.ts';
import type { Tuning } from '../../protocol/http/settings.ts';
import { CallTable } from '../../state/call-table.ts';
import { ownBuffer, type RelayRequest } from '../../protocol/relay.ts';
import type {
  BenchmarkFigures,
  DraftChoice,
  FromRuntime,
  LoadedEntry,
  RuntimeConfig,
  RuntimeControl,
  RuntimeEvent,
  RuntimeWorkerData,
  ToRuntime,
} from '../../protocol/runtime.ts';
import { isSharedBody, sharedBodyView } from '../shared/body-arena.ts';
import { deliverRelayMessage, type RelayPool, type RelaySink } from '../shared/relay-sink.ts';

// The edge's side of the embedded runtime: the same start/close contract as the proxy relay pool, served
// by one runtime worker thread that owns the loaded models. The worker starts on the first call (a service
// without embedded providers never pays for llama.cpp); if it dies, only its calls fail and the next call
// starts a new one.

export interface RuntimePoolOptions {
  dataDir: string;
  /** The settings value; null means `<dataDir>/models`. Read at every call. */
  modelsDirectory(): string | null;
  tuning(): Tuning;
  /** How long model `name` stays loaded when idle (`runtime.keepAliveSeconds` or its own); read at every call. */
  keepAliveSeconds(name: string | null): number;
  /** The worker's unasked news: a file llama.cpp refused, an idle model unloaded (which the pool logs). */
  onEvent?(event: RuntimeEvent): void;
  /** The draft model of the call's catalog model when its acceleration is `draft`; read at every call. */
  draftFor?(req: RelayRequest): DraftChoice | null;
  /** The worker stopped (crashed, or closed): every model it held is gone. */
  onWorkerLost?(): void;
  log: Logger;
}

export interface ControlAnswer {
  loaded: LoadedEntry[];
  unloaded?: boolean;
  benchmark?: BenchmarkFigures;
}

/** For control calls that report progress and can stop (a benchmark). */
export interface ControlOptions {
  progress?(fraction: number): void;
  /** Aborting asks the worker to stop the call; it then fails. */
  signal?: AbortSignal;
}

/** The relay pool contract, plus the control calls behind the model actions and GET /v1/runtime/loaded. */
export interface RuntimePool extends RelayPool {
  control(c: RuntimeControl, options?: ControlOptions): Promise<ControlAnswer>;
  /** The loaded models; no worker means nothing is loaded, and asking does not start one. */
  loaded(): Promise<LoadedEntry[]>;
}

/** How long a close waits for the worker to dispose its models before stopping it anyway. */
const CLOSE_WAIT_MS = 10_000;
/** Respawns closer together than this wait, so a worker that dies at once cannot spin the CPU. */
const RESPAWN_BACKOFF_MS = 1000;

export function defaultModelsDirectory(dataDir: string): string {
  return join(dataDir, 'models');
}

/** Embedded calls carry their whole body: there is no streamed upload or upstream socket to pace. */
const NO_PACING = {
  body: () => undefined,
  pause: () => undefined,
  resume: () => undefined,
  credit: () => undefined,
};

/** What each call and control carries of the settings, read when it starts. */
const configOf = (options: RuntimePoolOptions, name: string | null): RuntimeConfig => ({
  modelsDirectory: options.modelsDirectory() ?? defaultModelsDirectory(options.dataDir),
  tuning: { ...options.tuning() },
  keepAliveSeconds: options.keepAliveSeconds(name),
});

type Controls = Map<
  number,
  { resolve(a: ControlAnswer): void; reject(e: ServiceError): void; progress?(fraction: number): void }
>;

/** One worker's messages: its models' events, its controls' progress and answers, its calls' relay messages. */
function runtimeMessages(
  w: Worker,
  mine: CallTable<RelaySink>,
  myControls: Controls,
  options: RuntimePoolOptions,
  onClosed: () => void,
) {
  return (m: FromRuntime) => {
    if (m.t === 'refused' || m.t === 'expired' || m.t === 'loading' || m.t === 'loaded') {
      // The name is the model's library name (its own ID), never a path; bounded as it comes from the disk.
      // A refusal is logged by the library, once per file version, not once per call that met it.
      if (m.t === 'expired') options.log.info({ model: m.name.slice(0, 200) }, 'unloaded an idle embedded model');
      options.onEvent?.(m);
      return;
    }
    if (m.t === 'closed') {
      onClosed();
      return;
    }
    if (m.t === 'control-progress') {
      myControls.get(m.id)?.progress?.(m.progress);
      return;
    }
    // The runtime has no body arena, so it never sends 'free'.
    if (m.t !== 'control') {
      if (m.t !== 'free') deliverRelayMessage(m, mine);
    } else {
      const waiter = myControls.get(m.id);
      myControls.delete(m.id);
      if (m.ok)
        waiter?.resolve({
          loaded: m.loaded,
          ...(m.unloaded !== undefined && { unloaded: m.unloaded }),
          ...(m.benchmark && { benchmark: m.benchmark }),
        });
      else waiter?.reject(ServiceError.fromPayload(m.error as ErrorPayload));
    }
    // An idle runtime does not keep the process alive; one with calls in flight does.
    if (mine.size === 0 && myControls.size === 0) w.unref();
  };
}

/** A worker gone: every call and control it held fails. */
function failAll(mine: CallTable<RelaySink>, myControls: Controls): void {
  for (const sink of mine.values()) {
    sink.error(new ServiceError('UPSTREAM_ERROR', 'The embedded runtime stopped during the request.'), null);
  }
  mine.clear();
  for (const waiter of myControls.values())
    waiter.reject(new ServiceError('UPSTREAM_ERROR', 'The embedded runtime stopped during the call.'));
  myControls.clear();
}

/**
 * Stops a worker: it disposes its models first (llama.cpp cut off mid-way aborts the process), and one that does
 * not answer in time is stopped anyway. `onClosed` is handed the resolver its `closed` message calls.
 */
async function closeWorker(w: Worker, onClosed: (resolve: () => void) => void): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([
    new Promise<void>((resolve) => {
      onClosed(resolve);
      w.once('exit', () => resolve());
      w.postMessage({ t: 'close' } satisfies ToRuntime);
    }),
    new Promise<void>((resolve) => (timer = setTimeout(resolve, CLOSE_WAIT_MS))),
  ]);
  clearTimeout(timer);
  await w.terminate();
}

// A factory: one closure holds the worker, its calls and its controls; `spawn` starts one, `live` waits for one.
export function createRuntimePool(options: RuntimePoolOptions): RuntimePool {
  const workerData: RuntimeWorkerData = { dataDir: options.dataDir };
  let worker: Worker | null = null;
  let inflight = new CallTable<RelaySink>();
  let controls: Controls = new Map();
  let nextId = 1;
  /** The close under way, once close was called. */
  let closing: Promise<void> | null = null;
  let lastSpawn = 0;
  let spawnWait: Promise<void> | null = null;
  /** Set while a close waits for the worker's `closed`. */
  let closed: (() => void) | null = null;

  function spawn(): Worker {
    const w = new Worker(new URL('./runtime-entry.js', import.meta.url), { workerData });
    const mine = new CallTable<RelaySink>();
    const myControls: Controls = new Map();
    inflight = mine;
    controls = myControls;
    worker = w;
    lastSpawn = Date.now();
    w.on(
      'message',
      runtimeMessages(w, mine, myControls, options, () => closed?.()),
    );
    let gone = false;
    const lost = (reason: unknown) => {
      if (gone) return;
      gone = true;
      if (closing === null)
        options.log.warn(
          { inflight: mine.size, reason: String(reason).slice(0, 200) },
          'the embedded runtime worker stopped',
        );
      failAll(mine, myControls);
      if (worker === w) worker = null;
      options.onWorkerLost?.();
    };
    w.on('error', lost);
    w.on('exit', lost);
    // After the listeners: on Node 20 a 'message' listener added later makes the worker hold the process again.
    w.unref();
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

  const configNow = (name: string | null) => configOf(options, name);

  async function control(c: RuntimeControl, extra: ControlOptions = {}): Promise<ControlAnswer> {
    const config = configNow('name' in c ? c.name : null);
    const w = await live();
    if (closing !== null) throw new ServiceError('UPSTREAM_ERROR', 'The service is stopping.');
    const id = nextId++;
    const { signal, progress } = extra;
    const cancel = () => w.postMessage({ t: 'cancel', id } satisfies ToRuntime);
    signal?.addEventListener('abort', cancel, { once: true });
    return new Promise<ControlAnswer>((resolve, reject) => {
      controls.set(id, { resolve, reject, ...(progress && { progress }) });
      w.ref();
      const m: ToRuntime = { t: 'control', id, control: c, config };
      w.postMessage(m);
      if (signal?.aborted) cancel();
    }).finally(() => signal?.removeEventListener('abort', cancel));
  }

  async function closeOnce(): Promise<void> {
    const w = worker;
    if (w === null) return;
    await closeWorker(w, (resolve) => (closed = resolve));
  }

  return {
    control,
    async loaded() {
      return worker ? (await control({ op: 'loaded' })).loaded : [];
    },
    start(req, sink) {
      const id = nextId++;
      let aborted = false;
      let target: { w: Worker; map: CallTable<RelaySink> } | null = null;
      const config = configNow(req.upstreamModelId);
      const draft = options.draftFor?.(req) ?? null;
      void live().then((w) => {
        if (aborted || closing !== null) return;
        target = { w, map: inflight };
        inflight.set(id, sink);
        w.ref();
        const m: ToRuntime = { t: 'start', id, req, config, draft };
        w.postMessage(m, req.body instanceof ArrayBuffer ? [req.body] : []);
      });
      const send = (m: ToRuntime) => target?.w.postMessage(m);
      return {
        ...NO_PACING,
        // A call the worker has ends with its `aborted` message (the tokens used until the generation stopped),
        // or with the last message that crossed the abort; one the worker never got ends here.
        abort() {
          const started = target?.map.has(id) ?? false;
          if (started && !aborted) send({ t: 'abort', id });
          aborted = true;
          return started;
        },
      };
    },
    close() {
      closing ??= closeOnce();
      return closing;
    },
  };
}

/**
 * The gateway's pool: `embedded` providers' calls go to the runtime, every other kind to the proxy relay.
 * One place decides, so the gateway routes stay free of kind checks.
 */
export function withEmbeddedRuntime(relay: RelayPool, runtime: RelayPool): RelayPool {
  const { arena } = relay;
  return {
    ...(arena && { arena }),
    start(req, sink) {
      if (req.target.kind !== 'embedded') return relay.start(req, sink);
      // The runtime worker has no view of the body arena: it gets a copy, and the slot is free at once.
      if (arena && isSharedBody(req.body)) {
        const copy = ownBuffer(sharedBodyView(arena.buffer, arena.slotSize, req.body));
        arena.free(req.body.shared);
        req = { ...req, body: copy };
      }
      return runtime.start(req, sink);
    },
    close: async () => {
      await Promise.all([relay.close(), runtime.close()]);
    },
  };
}
