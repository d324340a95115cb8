import { spawn, type ChildProcess } from 'node:child_process';
import { ServiceError } from '../protocol/errors.ts';
import type { Tuning } from '../protocol/http/settings.ts';
import type { ServiceExit, ServiceExitReason, ServiceState, ServiceView } from '../protocol/http/services.ts';
import { probe } from './runtime-discovery.ts';

// One supervised llama-server: spawned with the tuning mapped to its flags, health-checked on GET /health
// (503 while it loads the model, 200 once it serves), restarted after a delay that doubles with each death in
// a row (reset once it stayed healthy a while), given up on after repeated deaths before it was ever healthy,
// and stopped with SIGTERM, then SIGKILL after a grace period. Nothing the process prints is kept: its
// output may hold paths, and the exit status says enough.

export interface LaunchSpec {
  binary: string;
  modelPath: string;
  port: number;
  tuning: Tuning;
}

/** Why a launch could not even spawn; the instance reports it as the exit reason. */
export class LaunchRefused extends Error {
  constructor(readonly reason: Extract<ServiceExitReason, 'binary_missing' | 'model_missing' | 'memory_busy'>) {
    super(reason);
  }
}

export interface Timing {
  backoffFirstMs: number;
  backoffMaxMs: number;
  /** A process healthy this long resets the delay and the count of failed starts. */
  healthyMs: number;
  healthEveryMs: number;
  /** Consecutive failed health checks of a running process before it is killed and restarted. */
  healthFailures: number;
  /** How long a start may stay unhealthy (a large model loads for minutes). */
  startTimeoutMs: number;
  stopGraceMs: number;
  /** Deaths before the first healthy answer, in a row, after which the instance is `failed`. */
  maxFailedStarts: number;
}

export const TIMING: Timing = {
  backoffFirstMs: 500,
  backoffMaxMs: 30_000,
  healthyMs: 60_000,
  healthEveryMs: 5_000,
  healthFailures: 3,
  startTimeoutMs: 10 * 60_000,
  stopGraceMs: 5_000,
  maxFailedStarts: 5,
};

/** Test and bench hooks: `SWITCHYARD_SERVICE_TIMING='{"backoffFirstMs":50}'` overrides fields it names. */
export function timingFromEnv(env: NodeJS.ProcessEnv): Timing {
  const raw = env.SWITCHYARD_SERVICE_TIMING;
  if (!raw) return TIMING;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    parsed = null;
  }
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
    throw new Error('SWITCHYARD_SERVICE_TIMING must be a JSON object of millisecond figures.');
  }
  const out = { ...TIMING };
  for (const [k, v] of Object.entries(parsed)) {
    if (!(k in TIMING) || !Number.isInteger(v) || (v as number) < 1 || (v as number) > 3_600_000) {
      throw new Error(
        `SWITCHYARD_SERVICE_TIMING: \`${k.slice(0, 40)}\` is not a timing field with a positive integer.`,
      );
    }
    out[k as keyof Timing] = v as number;
  }
  return out;
}

/** runtime.tuning as llama-server flags: 0 is "automatic" (the flag is left out), gpuLayers -1 is CPU only. */
export function llamaServerArgs({ modelPath, port, tuning }: Omit<LaunchSpec, 'binary'>): string[] {
  const args = ['--model', modelPath, '--host', '127.0.0.1', '--port', String(port)];
  if (tuning.contextSize > 0) args.push('--ctx-size', String(tuning.contextSize));
  if (tuning.threads > 0) args.push('--threads', String(tuning.threads));
  if (tuning.gpuLayers !== 0) args.push('--n-gpu-layers', String(Math.max(0, tuning.gpuLayers)));
  if (tuning.parallel > 0) args.push('--parallel', String(tuning.parallel));
  if (tuning.batchSize > 0) args.push('--batch-size', String(tuning.batchSize));
  return args;
}

/** The process's part of a service's view. */
export type InstanceStatus = Pick<
  ServiceView,
  'state' | 'pid' | 'restarts' | 'nextStartAt' | 'lastExit' | 'startedAt' | 'readyAt'
>;

export interface InstanceOptions {
  /** Read at each launch: settings and the library may have changed since the last one. */
  launchSpec(): Promise<LaunchSpec>;
  timing: Timing;
  env: NodeJS.ProcessEnv;
  /** Every change of state (and of pid), after it happened. */
  onChange(status: InstanceStatus, previous: ServiceState): void;
}

const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

export const createInstance = (options: InstanceOptions): Instance => new Instance(options);

/** One llama-server's lifecycle; `start`, `stop` and `status` are its public side. */
export class Instance {
  readonly #launchSpec: InstanceOptions['launchSpec'];
  readonly #timing: Timing;
  readonly #env: NodeJS.ProcessEnv;
  readonly #onChange: InstanceOptions['onChange'];
  #state: ServiceState = 'stopped';
  #child: ChildProcess | null = null;
  #wanted = false;
  #restarts = 0;
  #failedStarts = 0;
  #delay: number;
  #nextStartAt: number | null = null;
  #lastExit: ServiceExit | null = null;
  #startedAt: number | null = null;
  #readyAt: number | null = null;
  /** Why the current process is being ended by us, so its exit reports that rather than `exited`. */
  #killReason: ServiceExitReason | null = null;
  readonly #timers = createTimers();
  readonly #ready = createWaiters();
  readonly #gone = createWaiters();
  /** Bumped at each launch: a health probe or timer of an earlier process must not touch the next one. */
  #generation = 0;

  constructor({ launchSpec, timing, env, onChange }: InstanceOptions) {
    this.#launchSpec = launchSpec;
    this.#timing = timing;
    this.#env = env;
    this.#onChange = onChange;
    this.#delay = timing.backoffFirstMs;
  }

  status(): InstanceStatus {
    return {
      state: this.#state,
      pid: this.#child?.pid ?? null,
      restarts: this.#restarts,
      nextStartAt: iso(this.#nextStartAt),
      lastExit: this.#lastExit,
      startedAt: iso(this.#startedAt),
      readyAt: iso(this.#readyAt),
    };
  }

  /** Starts it if it is not running or starting; resolves once it answers its health check. */
  start(): Promise<void> {
    const readied = this.#state === 'running' ? Promise.resolve() : this.#ready.wait();
    if (!this.#wanted || this.#state === 'failed' || this.#state === 'stopped') {
      this.#wanted = true;
      if (this.#state === 'stopped' || this.#state === 'failed') {
        this.#restarts = 0;
        this.#failedStarts = 0;
        this.#delay = this.#timing.backoffFirstMs;
        void this.#launch();
      }
      // `stopping`: the exit sees `wanted` and restarts through the backoff path at once.
    }
    return readied;
  }

  /** Stops it and resolves once the process is gone (SIGKILL after the grace period). */
  stop(): Promise<void> {
    this.#wanted = false;
    this.#generation++;
    if (!this.#child) {
      this.#timers.clear();
      this.#nextStartAt = null;
      if (this.#state !== 'stopped') {
        this.#move('stopped');
        this.#ready.settle(stoppedBeforeReady());
      }
      return Promise.resolve();
    }
    const stopped = this.#gone.wait();
    if (this.#state !== 'stopping') {
      this.#timers.clear();
      this.#move('stopping');
      this.#kill('stopped');
      const proc = this.#child;
      const t = setTimeout(() => proc.kill('SIGKILL'), this.#timing.stopGraceMs);
      void stopped.then(() => clearTimeout(t));
    }
    return stopped;
  }

  #move(next: ServiceState): void {
    const previous = this.#state;
    this.#state = next;
    this.#onChange(this.status(), previous);
  }

  async #launch(): Promise<void> {
    const mine = ++this.#generation;
    this.#nextStartAt = null;
    // Starting from the call on, not from the spawn: a view read while the binary is being looked up
    // must not show a service that was just started as stopped.
    if (this.#state !== 'starting') this.#move('starting');
    let spec: LaunchSpec;
    try {
      spec = await this.#launchSpec();
    } catch (err) {
      if (mine !== this.#generation || !this.#wanted) return;
      const reason = err instanceof LaunchRefused ? err.reason : 'spawn_failed';
      return this.#died(spawnFailed(reason), false);
    }
    if (mine !== this.#generation || !this.#wanted) return;
    this.#killReason = null;
    this.#readyAt = null;
    this.#startedAt = Date.now();
    const proc = spawnChild(spec, this.#env, (end) => {
      const wasHealthy = this.#readyAt !== null;
      this.#child = null;
      if (end === 'error') return this.#died(spawnFailed('spawn_failed'), false);
      this.#died({ ...spawnFailed(this.#killReason ?? 'exited'), code: end.code, signal: end.signal }, wasHealthy);
    });
    if (proc === null) return this.#died(spawnFailed('spawn_failed'), false);
    this.#child = proc;
    this.#onChange(this.status(), this.#state); // the pid is known now
    watchHealth({
      url: `http://127.0.0.1:${spec.port}/health`,
      timing: this.#timing,
      current: () => mine === this.#generation && this.#child === proc,
      state: () => this.#state,
      later: this.#timers.later,
      kill: (reason) => this.#kill(reason),
      healthy: () => {
        this.#readyAt = Date.now();
        this.#move('running');
        this.#ready.settle(null);
      },
      stayedHealthy: () => {
        this.#failedStarts = 0;
        this.#delay = this.#timing.backoffFirstMs;
      },
    });
  }

  /** Ends the current process for a reason of ours; its exit then restarts it (or not, when stopping). */
  #kill(reason: ServiceExitReason): void {
    if (!this.#child) return;
    this.#killReason = reason;
    this.#child.kill(reason === 'stopped' ? 'SIGTERM' : 'SIGKILL');
  }

  #died(exit: ServiceExit, wasHealthy: boolean): void {
    this.#timers.clear();
    this.#lastExit = exit;
    this.#startedAt = null;
    this.#readyAt = null;
    if (!this.#wanted) {
      this.#move('stopped');
      this.#gone.settle(null);
      this.#ready.settle(stoppedBeforeReady());
      return;
    }
    if (!wasHealthy) this.#failedStarts++;
    const hopeless = exit.reason === 'binary_missing' || exit.reason === 'model_missing';
    if (this.#failedStarts >= this.#timing.maxFailedStarts || hopeless) {
      this.#wanted = false;
      this.#move('failed');
      this.#ready.settle(notHealthy(exit, this.#failedStarts));
      return;
    }
    this.#restarts++;
    this.#nextStartAt = Date.now() + this.#delay;
    const wait = this.#delay;
    this.#delay = Math.min(this.#delay * 2, this.#timing.backoffMaxMs);
    this.#move('restarting');
    this.#timers.later(wait, () => void this.#launch());
  }
}

/** An exit with no process status: the launch refused, the spawn failed, or (with its status) how it ended. */
const spawnFailed = (reason: ServiceExitReason): ServiceExit => ({
  reason,
  code: null,
  signal: null,
  at: new Date().toISOString(),
});

const stoppedBeforeReady = () => new ServiceError('CONFLICT', 'The service was stopped before it became ready.');

function notHealthy(exit: ServiceExit, failedStarts: number): ServiceError {
  return new ServiceError(
    'CONFLICT',
    `The llama-server did not become healthy ` +
      `(${exit.reason}${exit.code !== null ? `, status ${exit.code}` : ''}).`,
    {
      details: { reason: exit.reason, code: exit.code, signal: exit.signal, failedStarts },
    },
  );
}

/** Timers that end with the process they were set for (clear() drops every one still pending). */
function createTimers() {
  let timers: NodeJS.Timeout[] = [];
  return {
    later(ms: number, fn: () => void): void {
      const t = setTimeout(() => {
        timers = timers.filter((x) => x !== t);
        fn();
      }, ms);
      timers.push(t);
    },
    clear(): void {
      for (const t of timers) clearTimeout(t);
      timers = [];
    },
  };
}

/** Callers waiting for one moment (ready, gone); each settle answers those waiting then. */
function createWaiters() {
  let waiters: { resolve(): void; reject(err: Error): void }[] = [];
  return {
    wait: () => new Promise<void>((resolve, reject) => waiters.push({ resolve, reject })),
    settle(err: Error | null): void {
      const settled = waiters;
      waiters = [];
      for (const w of settled) err ? w.reject(err) : w.resolve();
    },
  };
}

/** Spawns the process; `onEnd` hears once how it ended: it never started (`error`), or it exited. */
function spawnChild(
  spec: LaunchSpec,
  env: NodeJS.ProcessEnv,
  onEnd: (end: 'error' | { code: number | null; signal: NodeJS.Signals | null }) => void,
): ChildProcess | null {
  let proc: ChildProcess;
  try {
    proc = spawn(spec.binary, llamaServerArgs(spec), { stdio: 'ignore', env, windowsHide: true });
  } catch {
    return null;
  }
  let ended = false;
  proc.on('error', () => {
    // ENOENT or EACCES: no exit event follows when the process never started.
    if (ended || proc.pid !== undefined) return;
    ended = true;
    onEnd('error');
  });
  proc.on('exit', (code, signal) => {
    if (ended) return;
    ended = true;
    onEnd({ code, signal });
  });
  return proc;
}

interface HealthWatch {
  url: string;
  timing: Timing;
  /** Whether the process watched is still the instance's current one. */
  current(): boolean;
  state(): ServiceState;
  later(ms: number, fn: () => void): void;
  kill(reason: ServiceExitReason): void;
  /** Its first healthy answer. */
  healthy(): void;
  /** Healthy for `timing.healthyMs` since. */
  stayedHealthy(): void;
}

/** Polls GET /health until the process serves (or the start times out), then watches it while it runs. */
function watchHealth(h: HealthWatch): void {
  const { timing } = h;
  const deadline = Date.now() + timing.startTimeoutMs;
  const pollStart = () => {
    if (!h.current()) return;
    if (Date.now() > deadline) return h.kill('start_timeout');
    probe(h.url, Math.min(2_000, timing.healthEveryMs)).then((answer) => {
      if (!h.current() || h.state() !== 'starting') return;
      if (!answer.ok) return h.later(Math.min(250, timing.healthEveryMs), pollStart);
      h.healthy();
      h.later(timing.healthyMs, () => {
        if (h.current()) h.stayedHealthy();
      });
      h.later(timing.healthEveryMs, () => watch(0));
    });
  };
  const watch = (failures: number) => {
    if (!h.current()) return;
    probe(h.url, Math.min(2_000, timing.healthEveryMs)).then((answer) => {
      if (!h.current() || h.state() !== 'running') return;
      const next = answer.ok ? 0 : failures + 1;
      if (next >= timing.healthFailures) return h.kill('health_check_failed');
      h.later(timing.healthEveryMs, () => watch(next));
    });
  };
  pollStart();
}
