// A semaphore: at most `size` tasks run at once; the rest wait in a FIFO queue and are started as slots
// free up. A slot is released in `finally`, so a task that throws cannot leak it, and nothing polls.

export interface Semaphore {
  run<T>(task: () => Promise<T>): Promise<T>;
  /** Tasks running now (tests count against this). */
  active(): number;
  waiting(): number;
}

export function createSemaphore(size: number): Semaphore {
  if (!Number.isInteger(size) || size < 1) throw new RangeError('pool size must be a positive integer');
  let running = 0;
  const queue: (() => void)[] = [];

  async function acquire(): Promise<void> {
    if (running < size) {
      running++;
      return;
    }
    // The releasing task hands its slot over directly, so `running` never dips and lets a newcomer jump the queue.
    await new Promise<void>((resolve) => queue.push(resolve));
  }

  function release(): void {
    const next = queue.shift();
    if (next) next();
    else running--;
  }

  return {
    async run(task) {
      await acquire();
      try {
        return await task();
      } finally {
        release();
      }
    },
    active: () => running,
    waiting: () => queue.length,
  };
}
