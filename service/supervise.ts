import type { ChildProcess } from 'node:child_process';
import { constants } from 'node:os';

// `switchyard start` keeps the service running as a workstation service is expected to: the service runs in
// a child process, and one that dies (a crash, a signal, the OOM killer) is started again after a delay
// that doubles with each failure in a row. A child that says it cannot start (EXIT_CANNOT_START: the port
// is taken, the configuration is bad) would fail the same way again: the supervisor gives up instead.
// SIGINT and SIGTERM go on to the child, and the supervisor exits with the child's status once it stopped.

/** sysexits.h EX_CONFIG: the service could not start, and starting it again would fail the same way. */
export const EXIT_CANNOT_START = 78;

export interface Backoff {
  firstMs: number;
  maxMs: number;
  /** A child that has served this long resets the delay to `firstMs`. */
  healthyMs: number;
}

export const BACKOFF: Backoff = { firstMs: 500, maxMs: 30_000, healthyMs: 60_000 };

/** What a supervised service sends over its IPC channel once it listens. */
export interface ReadyMessage {
  t: 'ready';
  port: number;
}

export const isReady = (m: unknown): m is ReadyMessage =>
  typeof m === 'object' && m !== null && (m as { t?: unknown }).t === 'ready';

/** The part of a pino logger the supervisor writes to. */
export interface SupervisorLog {
  info(fields: object, msg: string): void;
  warn(fields: object, msg: string): void;
  error(fields: object, msg: string): void;
}

export interface SupervisorOptions {
  /** Starts one service process, with an IPC channel over which it sends a ReadyMessage. */
  spawnService(): ChildProcess;
  /** Registers the handler of the stop signals (process.on for SIGINT and SIGTERM). */
  onStopSignal(handler: (signal: NodeJS.Signals) => void): void;
  log: SupervisorLog;
  /** A notice for the person at the terminal (stderr). */
  say(line: string): void;
  backoff?: Backoff;
}

// The supervisor's state (the child, the stop signal, the backoff) lives in this one closure, shared by its
// handlers.
/** Runs the service until it is asked to stop, stops for good, or cannot start; resolves with the exit code. */
export function supervise({
  spawnService,
  onStopSignal,
  log,
  say,
  backoff = BACKOFF,
}: SupervisorOptions): Promise<number> {
  return new Promise((resolve) => {
    let child: ChildProcess | null = null;
    let stopping: NodeJS.Signals | null = null;
    let delay = backoff.firstMs;
    let restarts = 0;
    let pendingStart: NodeJS.Timeout | null = null;
    let healthy: NodeJS.Timeout | null = null;
    let finished = false;

    const finish = (code: number) => {
      if (finished) return;
      finished = true;
      if (pendingStart !== null) clearTimeout(pendingStart);
      if (healthy !== null) clearTimeout(healthy);
      resolve(code);
    };

    function cannotSpawn(err: Error): void {
      say(`switchyard: could not start the service process: ${err.message}`);
      log.error({ err: err.message }, 'could not start the service process');
      finish(1);
    }

    function start(): void {
      pendingStart = null;
      let c: ChildProcess;
      try {
        c = spawnService();
      } catch (err) {
        return cannotSpawn(err instanceof Error ? err : new Error(String(err)));
      }
      child = c;
      log.info({ pid: c.pid ?? null, supervisorPid: process.pid, restarts }, 'service process started');
      c.on('message', (m: unknown) => {
        if (!isReady(m) || healthy !== null) return;
        healthy = setTimeout(() => (delay = backoff.firstMs), backoff.healthyMs);
      });
      // Node emits 'error' without 'exit' when the process could not be spawned at all; later ones (a failed
      // kill or IPC send) change nothing here, but unheard they would throw.
      c.on('error', (err) => {
        if (c.pid === undefined) cannotSpawn(err);
      });
      c.once('exit', (code, signal) => exited(c, code, signal));
    }

    function exited(c: ChildProcess, code: number | null, signal: NodeJS.Signals | null): void {
      child = null;
      if (finished) return;
      if (healthy !== null) clearTimeout(healthy);
      healthy = null;
      if (stopping !== null) return finish(code ?? 128 + (signal === null ? 0 : (constants.signals[signal] ?? 0)));
      if (code === 0) {
        // Something stopped the service itself, cleanly (a signal sent to it directly): that is no crash.
        log.info({ pid: c.pid ?? null }, 'service process stopped on its own; the supervisor stops too');
        return finish(0);
      }
      if (code === EXIT_CANNOT_START) {
        say('switchyard: the service cannot start (see above); not restarting it.');
        log.error({ pid: c.pid ?? null, code }, 'service cannot start; giving up');
        return finish(EXIT_CANNOT_START);
      }
      restarts++;
      const wait = delay;
      delay = Math.min(delay * 2, backoff.maxMs);
      const how = signal !== null ? `signal ${signal}` : `exit code ${code}`;
      say(`switchyard: the service stopped unexpectedly (${how}); restarting it in ${wait / 1000} s.`);
      log.warn({ pid: c.pid ?? null, code, signal, restartInMs: wait, restarts }, 'service process died; restarting');
      pendingStart = setTimeout(start, wait);
    }

    onStopSignal((signal) => {
      if (finished) return;
      stopping = signal;
      // Between a crash and its restart there is nothing to stop.
      if (child === null) return finish(0);
      // A second signal is forwarded too: the service then exits at once.
      child.kill(signal);
    });

    start();
  });
}
