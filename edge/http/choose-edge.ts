import { nodeHttpUws } from './server-node.ts';
import { loadNativeUws, type NativeBuild, type Uws } from './uws-load.ts';

// Which edge serves: a native uWebSockets.js build that answers every request, else node:http in uWS's shape
// (server-node.ts). SWITCHYARD_EDGE picks: `auto` (the default), `node` (always node:http), `uws` (any native
// build that loads, or no start). An edge must never leave a real client's request unanswered: a build that
// does (uws-pack, the one that loads on glibc older than 2.38) runs only when asked for.

export type EdgeName = 'uWebSockets.js' | 'node:http';

export const EDGE_MODES = ['auto', 'node', 'uws'] as const;
export type EdgeMode = (typeof EDGE_MODES)[number];

export interface EdgeChoice {
  edge: EdgeName;
  uws: Uws;
  /** The native package that loaded, when it is uWebSockets.js. */
  build?: string;
  /** Why no native build runs, when it is node:http on `auto`. */
  failures?: string[];
  /** The native build that loads but `auto` passed over (it leaves some requests unanswered). */
  passedOver?: string;
}

export function parseEdgeMode(value: string | undefined): EdgeMode {
  const mode = value === undefined || value === '' ? 'auto' : value;
  if (!(EDGE_MODES as readonly string[]).includes(mode)) {
    throw new Error(
      `SWITCHYARD_EDGE must be one of ${EDGE_MODES.join(', ')}, not ${JSON.stringify(mode.slice(0, 40))}.`,
    );
  }
  return mode as EdgeMode;
}

export function chooseEdge(
  mode: EdgeMode,
  load: () => NativeBuild | { failures: string[] } = loadNativeUws,
): EdgeChoice {
  if (mode === 'node') return { edge: 'node:http', uws: nodeHttpUws() };
  const native = load();
  if ('uws' in native && (native.answersAll || mode === 'uws'))
    return { edge: 'uWebSockets.js', uws: native.uws, build: native.build };
  if ('uws' in native) return { edge: 'node:http', uws: nodeHttpUws(), passedOver: native.build };
  if (mode === 'uws')
    throw new Error(`SWITCHYARD_EDGE=uws, but no native uWebSockets.js build loads: ${native.failures.join('; ')}.`);
  return { edge: 'node:http', uws: nodeHttpUws(), failures: native.failures };
}

/** The most edge threads SWITCHYARD_EDGE_THREADS may ask for. */
export const EDGE_THREADS_MAX = 32;

/**
 * SWITCHYARD_EDGE_THREADS: a count from 1 to EDGE_THREADS_MAX, or `auto` (the default): one thread up to four
 * cores, where a second costs more than it gives (bench/RESULTS.md), else a quarter of the cores.
 */
export function parseEdgeThreads(value: string | undefined, cores: number): number {
  if (value === undefined || value === '' || value === 'auto')
    return cores <= 4 ? 1 : Math.min(8, Math.floor(cores / 4));
  const n = /^\d{1,2}$/.test(value) ? Number(value) : Number.NaN;
  if (!(n >= 1 && n <= EDGE_THREADS_MAX)) {
    throw new Error(
      `SWITCHYARD_EDGE_THREADS must be auto or a count from 1 to ${EDGE_THREADS_MAX}, ` +
        `not ${JSON.stringify(value.slice(0, 40))}.`,
    );
  }
  return n;
}
