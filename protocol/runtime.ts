import type { Tuning } from './http/settings.ts';
import type { RelayRequest, ToWorker } from './relay.ts';

// The runtime worker speaks the relay protocol (protocol/relay.ts) with one change: each start carries the
// settings it runs under, read at the moment the call starts, so a settings change needs no message of its own.

export interface RuntimeConfig {
  /** Absolute; the edge resolved `null` to `<dataDir>/models`. */
  modelsDirectory: string;
  tuning: Tuning;
}

export type ToRuntime =
  | Exclude<ToWorker, { t: 'start' }>
  | { t: 'start'; id: number; req: RelayRequest; config: RuntimeConfig };

/** The worker's data at start. */
export interface RuntimeWorkerData {
  dataDir: string;
}
