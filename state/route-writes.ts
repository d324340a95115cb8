// The response routes being written on any thread of the service (store/response-route-repo.ts), in one cell of
// shared memory. A thread reads its own writes from memory until they commit, but a client that has its
// response from one edge thread can name it on a connection another thread serves, before that commit: a miss
// there waits for the writes under way to end, then reads again.

const IN_FLIGHT = 0;

export function createRouteWritesBuffer(): SharedArrayBuffer {
  return new SharedArrayBuffer(4);
}

export interface RouteWrites {
  begin(): void;
  end(): void;
  /**
   * With writes under way: resolves true once their count changes (one ended, or another began), false when
   * `timeoutMs` passes first. With none: false at once.
   */
  changed(timeoutMs: number): Promise<boolean>;
}

export function createRouteWrites(buffer: SharedArrayBuffer = createRouteWritesBuffer()): RouteWrites {
  const cells = new Int32Array(buffer);
  return {
    begin() {
      Atomics.add(cells, IN_FLIGHT, 1);
    },
    end() {
      Atomics.sub(cells, IN_FLIGHT, 1);
      Atomics.notify(cells, IN_FLIGHT);
    },
    async changed(timeoutMs) {
      const now = Atomics.load(cells, IN_FLIGHT);
      if (now <= 0) return false;
      const waited = Atomics.waitAsync(cells, IN_FLIGHT, now, timeoutMs);
      const result = waited.async ? await waited.value : waited.value;
      return result !== 'timed-out';
    },
  };
}
