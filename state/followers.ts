// Who follows a piece of the control plane's state (the auth table, the catalog, the settings) from another
// thread: each is told every change, and may answer a promise, its thread's acknowledgement. A write answers
// once those have settled, so the next request on any edge thread sees it. A follower whose promise fails (its
// thread gone) holds nothing.

export type Follower<C> = (change: C) => unknown;

export interface Followers<C> {
  /** Adds a follower; returns its removal. */
  add(follower: Follower<C>): () => void;
  /** Tells every follower; settles once each has acknowledged this change. */
  tell(change: C): Promise<void>;
  /** Settles once every acknowledgement still awaited, of any change told so far, has. */
  settled(): Promise<void>;
}

export function createFollowers<C>(): Followers<C> {
  const followers = new Set<Follower<C>>();
  // The acknowledgements still awaited; each leaves the set as it settles.
  const awaited = new Set<Promise<unknown>>();
  return {
    add(follower) {
      followers.add(follower);
      return () => void followers.delete(follower);
    },
    async tell(change) {
      const acks: Promise<unknown>[] = [];
      for (const follow of followers) {
        const ack = follow(change);
        if (!(ack instanceof Promise)) continue;
        const held: Promise<unknown> = ack.catch(() => undefined).then(() => awaited.delete(held));
        awaited.add(held);
        acks.push(held);
      }
      await Promise.all(acks);
    },
    async settled() {
      await Promise.all(awaited);
    },
  };
}
