import { totalmem } from 'node:os';

// How many request-body bytes the edge holds at once, across all connections. Each body is bounded by its
// route's limit, but 300 connections each sending a 16 MiB body would still hold gigabytes: past the budget a
// new body is refused with 503 OVERLOADED before a byte of it is buffered.

const MiB = 1024 * 1024;

/** A sixteenth of the machine's memory, between 64 MiB and 1 GiB. */
export function defaultBodyBudget(memory = totalmem()): number {
  return Math.min(1024 * MiB, Math.max(64 * MiB, Math.floor(memory / 16)));
}

export interface BodyBudget {
  /**
   * Takes `bytes` from the budget, or answers false when they do not fit. A body is always admitted when
   * nothing else is held, so a budget below a route's limit slows large bodies down but never refuses all.
   */
  take(bytes: number): boolean;
  give(bytes: number): void;
  held(): number;
}

export function createBodyBudget(limit: () => number): BodyBudget {
  let held = 0;
  return {
    take(bytes) {
      if (held > 0 && held + bytes > limit()) return false;
      held += bytes;
      return true;
    },
    give(bytes) {
      held -= bytes;
    },
    held: () => held,
  };
}
