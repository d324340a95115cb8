import { join } from 'node:path';
import { pino } from 'pino';
import { createRequire, syncBuiltinESMExports } from 'node:module';
import { staleBuild } from '../../bin/build-stamp.js';
import type * as Compose from '../../service/compose.ts';
import type * as Log from '../../edge/http/log.ts';
import type * as LogTailModule from '../../edge/http/log-tail.ts';
import type * as ChooseEdge from '../../edge/http/choose-edge.ts';
import type { RunningService } from '../../service/compose.ts';
import type { LogTail } from '../../edge/http/log-tail.ts';
import { handleParts, tempHome, type ServiceHandle } from './service.ts';

// The service inside the test process: the composition root (service/compose.ts) called as service/main.ts
// calls it, with a logger whose lines land in memory instead of on stdout. A start costs a few hundred
// milliseconds instead of a new Node process, and a test file may start several. What only a separate process
// has stays with test/helpers/service.ts: signals, kill -9, the supervisor, stderr notices, exit codes, the
// compiled build, the CLI, locks across processes.

interface Modules {
  startService: typeof Compose.startService;
  createLogger: typeof Log.createLogger;
  createLogTail: typeof LogTailModule.createLogTail;
  parseEdgeMode: typeof ChooseEdge.parseEdgeMode;
}

const DIST = new URL('../../dist/', import.meta.url);
let modules: Promise<Modules> | null = null;

/**
 * The service's modules from dist/ while it was built from the source as it is now (`npm test` builds it
 * first), else from the source, as serviceBin (./service.ts) picks the executable. The difference is the
 * service's worker threads: from the source each registers tsx and loads TypeScript, ~0.5 s of CPU a thread,
 * five threads a start. Decided once per test file.
 */
function load(): Promise<Modules> {
  modules ??= (async () => {
    workersWithoutTsx();
    const root = staleBuild(DIST) === null ? DIST : new URL('../../', import.meta.url);
    const ext = root === DIST ? 'js' : 'ts';
    const at = (path: string) => new URL(`${path}.${ext}`, root).href;
    const [compose, log, tail, edge] = await Promise.all([
      import(at('service/compose')) as Promise<typeof Compose>,
      import(at('edge/http/log')) as Promise<typeof Log>,
      import(at('edge/http/log-tail')) as Promise<typeof LogTailModule>,
      import(at('edge/http/choose-edge')) as Promise<typeof ChooseEdge>,
    ]);
    return {
      startService: compose.startService,
      createLogger: log.createLogger,
      createLogTail: tail.createLogTail,
      parseEdgeMode: edge.parseEdgeMode,
    };
  })();
  return modules;
}

/**
 * The test process runs with tsx's loader (`--import tsx`), and a worker thread inherits its execArgv: each of
 * a service's threads would register tsx again at its start (~0.3 s of CPU a thread, half a dozen threads a
 * start) though it loads compiled JavaScript, or registers tsx itself where it loads the source
 * (workers/load-beside.js). The service's threads start without it, as they do in a spawned service.
 */
function workersWithoutTsx(): void {
  const threads = createRequire(import.meta.url)('node:worker_threads') as typeof import('node:worker_threads');
  const Base = threads.Worker;
  if ((Base as { withoutTsx?: true }).withoutTsx) return;
  // None of the test process's flags: a spawned service's threads have none either, and Node 24 gives a test file's
  // process flags a worker refuses (ERR_WORKER_INVALID_EXEC_ARGV: --stack-trace-limit, --v8-pool-size, ...).
  const execArgv: string[] = [];
  class Worker extends Base {
    static withoutTsx = true as const;
    constructor(filename: string | URL, options: import('node:worker_threads').WorkerOptions = {}) {
      super(filename, { execArgv, ...options });
    }
  }
  threads.Worker = Worker;
  // `import { Worker } from 'node:worker_threads'` in the service's modules sees the replacement too.
  syncBuiltinESMExports();
}

let sharedState: string | null = null;
/**
 * Where services record themselves for the CLI (bin/locate.js): one directory for the test process, not the
 * user's own. One per process, not per service as for a spawned one: the variable is the process's.
 */
function stateHome(): string {
  sharedState ??= join(tempHome(), 'state');
  return sharedState;
}

/** The environment every test service gets, as startService (./service.ts) sets for the spawned one. */
const DEFAULT_ENV: Record<string, string> = {
  SWITCHYARD_LOG_LEVEL: 'info',
  SWITCHYARD_VAULT: 'file',
  SWITCHYARD_GAUGE_ALLOWED_HOSTS: 'loopback',
};

export interface InProcessService extends ServiceHandle {
  /** The composition root's handle, for the rare test that needs it (bootstrapSecret, modelsDirectory). */
  running: RunningService;
}

// Services a test file left running are closed when its last test is done (node:test waits for nothing else).
const running = new Set<InProcessService>();

// Environment variables are per process: a service's `env` holds while it starts (where the composition root
// reads them) and until it stops, and two live services may not want different values of one variable.
const envOwners = new Map<string, { value: string; count: number; before: string | undefined }>();
function claimEnv(env: Record<string, string>): () => void {
  for (const [k, v] of Object.entries(env)) {
    const owner = envOwners.get(k);
    if (owner && owner.value !== v)
      throw new Error(`in-process services disagree on ${k}: ${owner.value} and ${v}; use the spawned startService`);
  }
  for (const [k, v] of Object.entries(env)) {
    const owner = envOwners.get(k);
    if (owner) owner.count++;
    else {
      envOwners.set(k, { value: v, count: 1, before: process.env[k] });
      process.env[k] = v;
    }
  }
  let released = false;
  return () => {
    if (released) return;
    released = true;
    for (const k of Object.keys(env)) {
      const owner = envOwners.get(k)!;
      if (--owner.count > 0) continue;
      envOwners.delete(k);
      if (owner.before === undefined) delete process.env[k];
      else process.env[k] = owner.before;
    }
  };
}

// The process's stderr is teed while any in-process service runs, for stderr(): a worker's or a library's
// message lands there, not in the log.
const stderrSinks = new Set<(text: string) => void>();
const writeStderr = process.stderr.write.bind(process.stderr) as (...args: unknown[]) => boolean;
let teed = false;
function teeStderr(sink: (text: string) => void): () => void {
  if (!teed) {
    teed = true;
    process.stderr.write = ((chunk: unknown, ...rest: unknown[]) => {
      const text =
        typeof chunk === 'string'
          ? chunk
          : Buffer.isBuffer(chunk) || chunk instanceof Uint8Array
            ? Buffer.from(chunk).toString('utf8')
            : String(chunk);
      for (const s of stderrSinks) s(text);
      return writeStderr(chunk, ...rest);
    }) as typeof process.stderr.write;
  }
  stderrSinks.add(sink);
  return () => void stderrSinks.delete(sink);
}

/** A logger as service/main.ts builds one (level, redaction, format), whose lines go to `sink` and `tail`. */
function capturingLogger(
  createLogger: Modules['createLogger'],
  level: string,
  tail: LogTail,
  sink: (text: string) => void,
) {
  const log = createLogger(level);
  // createLogger writes to fd 1, the test runner's channel to its parent. Swapping pino's stream for one that
  // keeps the lines (and feeds the tail, as createLogger's own layer does) keeps every other option. The
  // access logger (createAccessLogger) writes to the same stream, read from the same symbol.
  (log as unknown as Record<symbol, unknown>)[pino.symbols.streamSym] = {
    write(chunk: string | Buffer) {
      const text = typeof chunk === 'string' ? chunk : chunk.toString('utf8');
      sink(text);
      tail.push(text);
      return true;
    },
    flush(cb?: (err?: Error) => void) {
      cb?.();
    },
  };
  return log;
}

/**
 * What every in-process service of this test process gets unless its own options say otherwise: a family file
 * sets it before importing its suites (suites-channel.test.ts runs management suites with the routes reaching
 * the control plane over a MessagePort).
 */
export const inProcessDefaults = { controlChannel: false, edgeThreads: 1 };

export async function startInProcess(
  options: {
    home?: string;
    env?: Record<string, string>;
    port?: number;
    now?: () => number;
    controlChannel?: boolean;
    /** Edge threads (service/edge-threads.ts); a family file may set inProcessDefaults.edgeThreads instead. */
    edgeThreads?: number;
    /**
     * Runs before each family starts (service/compose.ts): for the rare test that must call a control service
     * itself, to order two writes as no pair of HTTP requests can.
     */
    beforeFamily?: Compose.ServiceOptions['beforeFamily'];
  } = {},
): Promise<InProcessService> {
  const home = options.home ?? tempHome();
  const env: Record<string, string> = { ...DEFAULT_ENV, XDG_STATE_HOME: stateHome(), ...options.env };
  let err = '';
  const untee = teeStderr((text) => (err += text));
  const releaseEnv = claimEnv(env);
  const release = () => {
    releaseEnv();
    untee();
  };
  let out = '';
  let service: RunningService;
  try {
    const { startService, createLogger, createLogTail, parseEdgeMode } = await load();
    const logTail = createLogTail();
    const log = capturingLogger(
      createLogger,
      process.env.SWITCHYARD_LOG_LEVEL ?? 'info',
      logTail,
      (text) => (out += text),
    );
    service = await startService({
      dataDir: home,
      port: options.port ?? 0,
      log,
      logTail,
      edge: parseEdgeMode(process.env.SWITCHYARD_EDGE),
      ...(options.now && { now: options.now }),
      ...(options.beforeFamily && { beforeFamily: options.beforeFamily }),
      controlChannel: options.controlChannel ?? inProcessDefaults.controlChannel,
      edgeThreads: options.edgeThreads ?? inProcessDefaults.edgeThreads,
    });
  } catch (err) {
    release();
    throw err;
  }
  let stopped: Promise<number | null> | null = null;
  const handle: InProcessService = {
    ...handleParts(
      home,
      service.port,
      () => out,
      () => err,
    ),
    running: service,
    /** As SIGTERM does in service/main.ts: drain (SWITCHYARD_DRAIN_MS, default 10 s), close; 0 when done. */
    stop() {
      stopped ??= (async () => {
        running.delete(handle);
        try {
          const drainMs = Number(env.SWITCHYARD_DRAIN_MS ?? process.env.SWITCHYARD_DRAIN_MS ?? 10_000);
          await service.close(Number.isFinite(drainMs) ? drainMs : 10_000);
          return 0;
        } finally {
          release();
        }
      })();
      return stopped;
    },
  };
  running.add(handle);
  return handle;
}

/** Every in-process service still running; for a file's last `after`. */
export async function stopAllInProcess(): Promise<void> {
  await Promise.all([...running].map((s) => s.stop()));
}
