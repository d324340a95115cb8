import type { LlamaContextSequence } from 'node-llama-cpp';
import { ServiceError } from '../../protocol/errors.ts';

// A fixed set of context sequences shared by concurrent calls: a call leases one, and waits in a bounded
// queue when every sequence is busy. `onIdle` fires whenever the last lease is returned with nobody
// waiting, so an unloaded model can be disposed only once no call still uses it.

/** Callers waiting for a sequence, per pool, before OVERLOADED. */
const MAX_WAITING = 256;

export interface SequenceLease {
  sequence: LlamaContextSequence;
  release(): void;
}

export interface SequencePool {
  acquire(signal: AbortSignal): Promise<SequenceLease>;
  /** Leases out plus callers waiting. */
  busy(): number;
}

export function sequencePool(name: string, sequences: LlamaContextSequence[], onIdle: () => void): SequencePool {
  const free = [...sequences];
  const waiting: { grant(s: LlamaContextSequence): void }[] = [];
  let leased = 0;

  const lease = (sequence: LlamaContextSequence): SequenceLease => {
    leased++;
    let released = false;
    return {
      sequence,
      release() {
        if (released) return;
        released = true;
        leased--;
        const next = waiting.shift();
        if (next) next.grant(sequence);
        else free.push(sequence);
        if (leased === 0 && waiting.length === 0) onIdle();
      },
    };
  };

  return {
    busy: () => leased + waiting.length,
    acquire(signal) {
      const sequence = free.pop();
      if (sequence) return Promise.resolve(lease(sequence));
      if (waiting.length >= MAX_WAITING) {
        return Promise.reject(
          new ServiceError('OVERLOADED', `Every sequence of \`${name}\` is busy and the queue is full.`, {
            headers: { 'Retry-After': '1' },
          }),
        );
      }
      return new Promise((resolvePromise, reject) => {
        const waiter = {
          grant: (s: LlamaContextSequence) => {
            signal.removeEventListener('abort', onAbort);
            resolvePromise(lease(s));
          },
        };
        const onAbort = () => {
          const at = waiting.indexOf(waiter);
          if (at >= 0) waiting.splice(at, 1);
          reject(new ServiceError('UPSTREAM_ERROR', 'The call was aborted while it waited.'));
          if (leased === 0 && waiting.length === 0) onIdle();
        };
        signal.addEventListener('abort', onAbort, { once: true });
        waiting.push(waiter);
      });
    },
  };
}
