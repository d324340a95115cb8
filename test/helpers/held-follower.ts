import assert from 'node:assert/strict';

// A follower on a far thread (an edge thread's auth table, catalog copy or settings) whose acknowledgement of
// each change a test gives by hand: the first call, the whole state a follower starts from, applies at once.

export interface HeldFollower<C> {
  follow(change: C): Promise<void> | undefined;
  /** Settles when a change after the first arrived. */
  told: Promise<void>;
  /** Applies the change held last and settles its promise. */
  acknowledge(): void;
}

export function heldFollower<C>(apply: (change: C) => unknown): HeldFollower<C> {
  let first = true;
  let held: (() => void) | null = null;
  let told!: () => void;
  const toldOnce = new Promise<void>((resolve) => (told = resolve));
  return {
    follow(change) {
      if (first) {
        first = false;
        apply(change);
        return undefined;
      }
      return new Promise<void>((resolve) => {
        held = () => {
          apply(change);
          resolve();
        };
        told();
      });
    },
    told: toldOnce,
    acknowledge: () => held!(),
  };
}

/** `write` has not answered while `follower` holds its change, and answers once it is acknowledged. */
export async function answersAfterAcknowledgement(write: Promise<unknown>, follower: HeldFollower<unknown>) {
  let answered = false;
  const writing = write.then(() => (answered = true));
  await follower.told;
  for (let turn = 0; turn < 20; turn++) await new Promise((r) => setImmediate(r));
  assert.equal(answered, false, 'the write answered before the far follower had its change');
  follower.acknowledge();
  await writing;
}
