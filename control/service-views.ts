import type { ServiceView } from '../protocol/http/services.ts';
import type { Tuning } from '../protocol/http/settings.ts';
import { effectiveTuning, type Entry } from './service-entries.ts';

// What GET /v1/services shows of a supervised llama-server and of the embedded runtime.

export function serviceView(entry: Entry, tuning: () => Tuning): ServiceView {
  const r = entry.record;
  const s = entry.instance.status();
  return {
    id: r.id,
    kind: 'llamacpp',
    displayName: r.displayName,
    state: s.state,
    desired: r.desired,
    model: r.model,
    // What the running process was given; while none runs, what the next start would give it.
    tuning: s.pid !== null && entry.launched !== null ? entry.launched : effectiveTuning(tuning, r),
    tuningOverrides: { ...r.tuning },
    url: `http://127.0.0.1:${r.port}`,
    port: r.port,
    binary: { name: entry.binaryName ?? 'llama-server', source: r.binary === null ? 'path' : 'configured' },
    pid: s.pid,
    restarts: s.restarts,
    nextStartAt: s.nextStartAt,
    lastExit: s.lastExit,
    startedAt: s.startedAt,
    readyAt: s.readyAt,
    actions: ['start', 'stop', 'restart'],
    createdAt: new Date(r.createdAt).toISOString(),
    updatedAt: new Date(r.updatedAt).toISOString(),
  };
}

export function embeddedView(id: string, closed: boolean, tuning: Tuning, loadedModels: number): ServiceView {
  return {
    id,
    kind: 'embedded',
    displayName: 'Embedded llama.cpp',
    state: closed ? 'stopped' : 'running',
    desired: 'running',
    model: null,
    tuning,
    tuningOverrides: null,
    url: null,
    port: null,
    binary: null,
    pid: null,
    restarts: 0,
    nextStartAt: null,
    lastExit: null,
    startedAt: null,
    readyAt: null,
    loadedModels,
    actions: [],
    createdAt: null,
    updatedAt: null,
  };
}
