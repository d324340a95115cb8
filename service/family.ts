import type { Logger } from 'pino';
import type { RouteDef } from '../edge/http/router.ts';

// A family is one part of the service (tokens and pairing, providers and catalog, the gateway, Gauge, ...): what
// it built, the routes it serves, and how it ends. The root starts the families in order and closes them in
// reverse, also when one of them fails to start: what was opened before the failure (the data-directory lock,
// the LMDB environment, worker threads) is closed again before the error leaves startService.

export interface Family {
  /** Its routes, read once every family has started (a route may need a later family's part). */
  routes?(): RouteDef[];
  /** After the listener is bound: timers and background work that may reach the listener's port. */
  ready?(): void;
  /** At the start of shutdown, before the drain: ends what never ends by itself (event streams, pairings). */
  drain?(): void;
  /**
   * After the drain, before the edge threads stop: ends this thread's calls still running, each with its usage
   * so far. A stopping edge thread waits for every connection on the port, this thread's too
   * (edge/http/open-connections.ts), so a call cut only at `close` would hold it until uWS's idle timeout.
   */
  cut?(): Promise<void>;
  /** Releases what it opened; called once, in reverse start order, after the drain. */
  close?(): void | Promise<void>;
}

/** What a family's start returns: the family, and the parts the families started after it may read. */
export interface Built<P extends object> {
  family: Family;
  parts: P;
}

/** Named families in start order; `started` grows as each one starts. */
export interface Families<S extends object> {
  /**
   * Starts a family on `deps`, the parts of the families started before it, and returns them with its own: the
   * next family's `deps`.
   */
  start<D extends Partial<S>, P extends object>(
    name: string,
    build: (deps: D) => Built<P> | Promise<Built<P>>,
    deps: D,
  ): Promise<D & P>;
  routes(): RouteDef[];
  ready(): void;
  drain(): void;
  /** Runs every started family's `cut` at once; one that throws is logged. */
  cut(): Promise<void>;
  /** Closes every started family in reverse order; a close that throws is logged and the rest still close. */
  close(): Promise<void>;
}

/** `beforeStart`: for tests, with the parts of the families started before this one. */
export function createFamilies<S extends object>(
  log: Logger,
  beforeStart?: (name: string, started: Readonly<Partial<S>>) => void | Promise<void>,
): Families<S> {
  const started: { name: string; family: Family }[] = [];
  return {
    async start(name, build, deps) {
      await beforeStart?.(name, deps);
      const { family, parts } = await build(deps);
      started.push({ name, family });
      return { ...deps, ...parts };
    },
    routes: () => started.flatMap(({ family }) => family.routes?.() ?? []),
    ready() {
      for (const { family } of started) family.ready?.();
    },
    drain() {
      for (const { family } of started) family.drain?.();
    },
    async cut() {
      await Promise.all(
        started.map(({ name, family }) =>
          family.cut?.().catch((err: unknown) => {
            log.error(
              { family: name, err: String(err).slice(0, 500) },
              'a part of the service failed to end its calls',
            );
          }),
        ),
      );
    },
    async close() {
      for (const { name, family } of started.splice(0).reverse()) {
        try {
          await family.close?.();
        } catch (err) {
          log.error({ family: name, err: String(err).slice(0, 500) }, 'a part of the service failed to close');
        }
      }
    },
  };
}
