// What GET /v1/runtime/discovery answers (control/runtime-discovery.ts probes): local runtimes the service could use.

export type DiscoverySource = 'default_address' | 'path' | 'provider';
export type DiscoveryState = 'reachable' | 'unreachable' | 'found';

export interface DiscoveredRuntime {
  kind: 'ollama' | 'llamacpp' | 'openai_compatible';
  source: DiscoverySource;
  providerId?: string;
  /** What the runtime says it is, or null when it did not say. */
  version: string | null;
  /** llama-server's build number (its release tag is `b<build>`), on PATH records only. */
  build?: number | null;
  state: DiscoveryState;
  /** Network runtimes: where it was probed, without credentials, query or fragment. */
  url?: string | null;
  /** PATH records: the binary's name, never its directory. */
  binary?: string;
  onPath?: true;
  /** Why an unreachable runtime is so, from a fixed vocabulary (`HTTP 503`, `timed out`, ...). */
  reason?: string | null;
}

export interface DiscoveryAnswer {
  data: DiscoveredRuntime[];
  probedAt: string;
}
