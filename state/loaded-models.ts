import type { LoadedRuntimeModel } from '../protocol/http/runtime.ts';
import type { CatalogReader } from '../protocol/ports/catalog.ts';
import type { LoadedEntry } from '../protocol/runtime.ts';

// The embedded runtime's loaded files as clients see them (by catalog ID), and its load progress by file, for
// the runtime routes and the control plane's load events alike.

/** The worker knows files by library name; clients know catalog IDs (one per embedded provider listing it). */
export function toViews(entries: LoadedEntry[], catalog: CatalogReader): LoadedRuntimeModel[] {
  const models = catalog.current().all();
  const embeddedIds = (name: string) =>
    models
      .filter((m) => m.upstreamModelId === name && catalog.current().provider(m.providerId)?.kind === 'embedded')
      .map((m) => m.id);
  return entries.flatMap(({ name, ...rest }) => {
    const ids = embeddedIds(name);
    return (ids.length > 0 ? ids : [name]).map((modelId) => ({ modelId, runtime: 'embedded' as const, ...rest }));
  });
}

/** The catalog IDs an embedded library file is listed under (the file's own name when none lists it). */
export function embeddedIdsOf(name: string, catalog: CatalogReader): string[] {
  return toViews([{ name } as LoadedEntry], catalog).map((v) => v.modelId);
}

/** The runtime's load progress by library name, to the load jobs waiting on that file. */
export function createLoadProgress() {
  const listeners = new Map<string, Set<(progress: number) => void>>();
  return {
    heard(name: string, progress: number): void {
      for (const listener of listeners.get(name) ?? []) listener(progress);
    },
    /** Returns the function that stops listening. */
    listen(name: string, listener: (progress: number) => void): () => void {
      const set = listeners.get(name) ?? new Set();
      listeners.set(name, set.add(listener));
      return () => {
        set.delete(listener);
        if (set.size === 0 && listeners.get(name) === set) listeners.delete(name);
      };
    },
  };
}
export type LoadProgress = ReturnType<typeof createLoadProgress>;
