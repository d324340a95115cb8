// Large request bodies travel to the relay workers in slots of one SharedArrayBuffer instead of in an
// ArrayBuffer of their own. A 256 KB ArrayBuffer per request is external memory to V8: at a few thousand
// such bodies a second, each isolate runs a full mark-compact several times a second for them, which cost
// the relay workers about a third of their time. Slots are allocated once and reused.
//
// A slot is the edge's from the body's first byte until the request settles, unless the route hands it to a
// worker (`handOff`); then the worker frees it once undici has written its bytes or the connection is gone
// (relay.ts). A worker that dies frees its slots through the pool. A slot is never written while anything
// may still read it: that would send one request's bytes in another's body.

import { scannableMemory, type ScannableMemory } from '../../protocol/control-bytes.ts';
import type { SharedBodyRef } from '../../protocol/relay.ts';

export interface SlotLease {
  body: Buffer;
  settle(): void;
}

/** The arena's buffer can be scanned for control characters in place (protocol/control-bytes.ts). */
export interface BodyArena extends ScannableMemory {
  readonly slotSize: number;
  /**
   * A free slot for a body of `length` bytes, or null: too large for a slot, or none is free. `settle` ends
   * the request's hold: the slot is free again unless it was handed off. Only this lease's `settle` frees
   * it, even when it comes late, after a worker freed the slot and another request took it.
   */
  acquire(length: number): SlotLease | null;
  /** A body in a slot becomes the worker's to free: returns the reference to send. Null for any other body. */
  handOff(body: Uint8Array): SharedBodyRef | null;
  /** A worker is done with a handed-off slot. */
  free(slot: number): void;
  /** Slots in use (for tests). */
  inUse(): number;
}

const FREE = 0;
const EDGE = 1;
const WORKER = 2;

// 64 slots of 512 KB: 32 MB of address space, resident only as far as peak concurrency has touched it.
const SLOT_SIZE = 512 * 1024;
const SLOTS = 64;

export function createBodyArena(slotSize = SLOT_SIZE, slots = SLOTS): BodyArena {
  // Untouched pages cost no memory: the arena's resident size is what peak concurrency has used.
  const memory = scannableMemory(slotSize * slots);
  const { buffer } = memory;
  const state = new Uint8Array(slots);
  // Most recently freed first, so a light load keeps reusing the same few slots (and pages).
  const freeSlots: number[] = [];
  for (let i = slots - 1; i >= 0; i--) freeSlots.push(i);

  // Bumped at each acquire: a lease settles only the hold it took.
  const generation = new Uint32Array(slots);

  const slotOf = (body: Uint8Array): number => (body.buffer === buffer ? Math.floor(body.byteOffset / slotSize) : -1);

  return {
    buffer,
    simd: memory.simd,
    hasControl: memory.hasControl,
    slotSize,
    acquire(length) {
      if (length > slotSize || freeSlots.length === 0) return null;
      const slot = freeSlots.pop()!;
      state[slot] = EDGE;
      const held = ++generation[slot]!;
      return {
        body: Buffer.from(buffer, slot * slotSize, length),
        settle() {
          if (generation[slot] !== held || state[slot] !== EDGE) return;
          state[slot] = FREE;
          freeSlots.push(slot);
        },
      };
    },
    handOff(body) {
      const slot = slotOf(body);
      if (slot === -1) return null;
      if (state[slot] !== EDGE || body.byteOffset !== slot * slotSize)
        throw new Error(`body slot ${slot} is not the edge's to hand off`);
      state[slot] = WORKER;
      return { shared: slot, length: body.byteLength };
    },
    free(slot) {
      if (state[slot] !== WORKER) return; // already freed (a worker's loss after its own free)
      state[slot] = FREE;
      freeSlots.push(slot);
    },
    inUse: () => slots - freeSlots.length,
  };
}

/** What a worker knows of the arena (it reaches the worker in its workerData). */
export interface WorkerArena {
  buffer: SharedArrayBuffer;
  slotSize: number;
}

/** A worker's view of a handed-off body. */
export function sharedBodyView(buffer: SharedArrayBuffer, slotSize: number, ref: SharedBodyRef): Buffer {
  return Buffer.from(buffer, ref.shared * slotSize, ref.length);
}

export const isSharedBody = (body: unknown): body is SharedBodyRef =>
  typeof body === 'object' && body !== null && typeof (body as SharedBodyRef).shared === 'number';
