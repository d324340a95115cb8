import type { Tuning } from '../../protocol/http/settings.ts';
import type { LoadedEntry, RuntimeConfig, RuntimeEvent } from '../../protocol/runtime.ts';
import { keepAlive, realTimers, type KeepAlive, type Timers } from './keep-alive.ts';
import { resolveModelPath } from './library.ts';
import type { LoadedModel } from './loaded-model.ts';
import { createLoader } from './model-load.ts';

// The loaded models of the runtime worker. A model is loaded on first use or by the `load` action (after its
// header is judged and a throwaway process has loaded it once), with one context whose sequences serve
// concurrent calls. An unloaded model leaves the list at once and is disposed when its last call ends; an idle
// one is unloaded when its keep-alive runs out (keep-alive.ts).

export type { SequenceLease } from './sequences.ts';
export type { LoadedModel } from './loaded-model.ts';

export interface ModelManagerOptions {
  /** What the edge hears: a file llama.cpp refused, a model unloaded by its keep-alive. */
  onEvent?(event: RuntimeEvent): void;
  timers?: Timers;
}

// A factory: one closure holds the list of loaded models, each with its keep-alive clock.
export function createModelManager(options: ModelManagerOptions = {}) {
  /** Disposals under way: shutdown waits for them, since llama.cpp must not be cut off mid-way. */
  const disposals = new Set<Promise<void>>();
  const track = (disposal: Promise<void>): void => {
    const settled = disposal.catch(() => undefined);
    disposals.add(settled);
    void settled.finally(() => disposals.delete(settled));
  };
  const timers = options.timers ?? realTimers;
  const load = createLoader({ onEvent: options.onEvent, track });
  const loaded = new Map<string, Promise<LoadedModel>>();
  /** The subset of `loaded` whose load has finished: listing never waits for a load in progress. */
  const ready = new Map<string, LoadedModel>();
  const alive = new Map<string, KeepAlive>();

  function entry(
    name: string,
    path: string,
    config: RuntimeConfig,
    byCall: boolean,
  ): { loading: Promise<LoadedModel>; alive: KeepAlive } {
    const current = loaded.get(path);
    if (current) return { loading: current, alive: alive.get(path)! };
    const loading = load(name, path, config.tuning);
    const clock = keepAlive(() => {
      if (loaded.get(path) !== loading) return;
      forget(path);
      void loading.then((m) => {
        m.retire();
        options.onEvent?.({ t: 'expired', name });
      });
    }, timers);
    loaded.set(path, loading);
    alive.set(path, clock);
    // A failed load is not remembered: the file may be fixed, and the probe verdict is cached anyway.
    loading.then(
      (m) => {
        if (loaded.get(path) !== loading) return;
        ready.set(path, m);
        if (byCall) options.onEvent?.({ t: 'loaded', name });
      },
      () => {
        if (loaded.get(path) === loading) forget(path);
      },
    );
    return { loading, alive: clock };
  }

  function forget(path: string): void {
    alive.get(path)?.cancel();
    alive.delete(path);
    loaded.delete(path);
    ready.delete(path);
  }

  return {
    /**
     * The loaded model `name`, loading it first (concurrent callers share one load), held until `release`:
     * the keep-alive clock runs only while no call holds the model.
     */
    async use(name: string, config: RuntimeConfig, byCall = true): Promise<{ model: LoadedModel; release(): void }> {
      const { loading, alive: clock } = entry(name, resolveModelPath(config.modelsDirectory, name), config, byCall);
      const release = clock.use(config.keepAliveSeconds);
      try {
        return { model: await loading, release };
      } catch (err) {
        release();
        throw err;
      }
    },
    /** Leaves the list now; memory is freed when the model's last call ends. False when it was not loaded. */
    async unload(name: string, config: RuntimeConfig): Promise<boolean> {
      const path = resolveModelPath(config.modelsDirectory, name);
      const model = loaded.get(path);
      if (!model) return false;
      forget(path);
      const m = await model.catch(() => null);
      m?.retire();
      return m !== null;
    },
    /**
     * A copy of model `name` loaded with `tuning`, outside the list and its keep-alive: a benchmark measures
     * exactly that tuning whatever is loaded. The caller retires it when done.
     */
    loadCopy(
      name: string,
      config: RuntimeConfig,
      tuning: Tuning,
      report: (progress: number) => void,
    ): Promise<LoadedModel> {
      return load(name, resolveModelPath(config.modelsDirectory, name), tuning, report);
    },
    /** Models whose load has finished, by name. */
    list(): LoadedEntry[] {
      return [...ready]
        .map(([path, m]) => {
          const at = alive.get(path)?.expiresAt() ?? null;
          return { ...m.info(), expiresAt: at === null ? null : new Date(at).toISOString() };
        })
        .sort((a, b) => a.name.localeCompare(b.name));
    },
    /** Retires every model and waits until each one in use ends and is disposed (bounded by the caller). */
    async close(): Promise<void> {
      const all = [...loaded.values()];
      for (const path of [...loaded.keys()]) forget(path);
      await Promise.allSettled(all.map(async (m) => (await m).retire()));
      while (disposals.size > 0) await Promise.allSettled([...disposals]);
    },
  };
}

export type ModelManager = ReturnType<typeof createModelManager>;
