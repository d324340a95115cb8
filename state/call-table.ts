// The calls in flight on one side of a thread port, by correlation id: the few operations a Map would give,
// kept in a plain object's integer-keyed elements.
//
// Why not a Map: a Map that takes a new id and drops an old one on every call rehashes into a new table every
// few dozen calls, and V8 keeps each old table pointing at its successor (for iterators still walking it).
// Once one of those tables has been promoted to the old generation, every later table, and every call
// object they hold, survives the young-generation collections that should free it. Measured on the edge under
// load (bench/PROFILE.md, fifth session): with a Map, ~2.7 KB of each call's objects were promoted and freed
// only by full collections, and each young collection took ~5 ms; with this table, ~0.7 KB and ~1.5 ms.

export class CallTable<T> {
  private entries: Record<number, T> = Object.create(null) as Record<number, T>;
  private count = 0;

  get size(): number {
    return this.count;
  }
  get(id: number): T | undefined {
    return this.entries[id];
  }
  has(id: number): boolean {
    return id in this.entries;
  }
  set(id: number, value: T): void {
    if (!(id in this.entries)) this.count++;
    this.entries[id] = value;
  }
  delete(id: number): boolean {
    if (!(id in this.entries)) return false;
    delete this.entries[id];
    this.count--;
    return true;
  }
  ids(): number[] {
    return Object.keys(this.entries).map(Number);
  }

  values(): T[] {
    return Object.values(this.entries);
  }
  clear(): void {
    this.entries = Object.create(null) as Record<number, T>;
    this.count = 0;
  }
}
