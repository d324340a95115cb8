// How long an idle model stays loaded (`runtime.keepAliveSeconds`, Ollama's keep_alive): the clock starts when
// the model's last call ends, a new call stops it, and when it runs out the model is unloaded. 0 unloads right
// after each call; -1 never. The timer functions are injectable so a test can run the clock by hand.

export interface Timers {
  now(): number;
  set(run: () => void, ms: number): unknown;
  clear(handle: unknown): void;
}

export const realTimers: Timers = {
  now: () => Date.now(),
  set(run, ms) {
    const t = setTimeout(run, ms);
    // A loaded model alone must not keep the worker (and so the service) from exiting.
    t.unref();
    return t;
  },
  clear: (handle) => clearTimeout(handle as NodeJS.Timeout),
};

export interface KeepAlive {
  /** A call starts using the model; the returned function ends it and restarts the clock. */
  use(keepAliveSeconds: number): () => void;
  /** Starts the clock if nothing uses the model (after a load with no call). */
  idle(keepAliveSeconds: number): void;
  /** When the model will be unloaded: epoch ms, or null while in use or kept forever. */
  expiresAt(): number | null;
  cancel(): void;
}

export function keepAlive(onExpire: () => void, timers: Timers = realTimers): KeepAlive {
  let users = 0;
  let handle: unknown = null;
  let deadline: number | null = null;
  let done = false;

  const stop = () => {
    if (handle !== null) timers.clear(handle);
    handle = null;
    deadline = null;
  };
  const arm = (seconds: number) => {
    stop();
    if (done || users > 0 || seconds < 0) return;
    if (seconds === 0) {
      done = true;
      onExpire();
      return;
    }
    deadline = timers.now() + seconds * 1000;
    handle = timers.set(() => {
      handle = null;
      deadline = null;
      if (users > 0 || done) return;
      done = true;
      onExpire();
    }, seconds * 1000);
  };

  return {
    use(seconds) {
      users++;
      stop();
      let ended = false;
      return () => {
        if (ended) return;
        ended = true;
        users--;
        arm(seconds);
      };
    },
    idle: arm,
    expiresAt: () => deadline,
    cancel() {
      done = true;
      stop();
    },
  };
}
