import type { ErrorPayload } from './errors.ts';
import type { ProviderKind, UpstreamModel } from './providers.ts';

// Messages between the edge and the workers. Each has a `kind`; errors cross as ErrorPayload because
// `instanceof` does not survive a thread boundary. Credentials never travel in them: a worker gets the
// vault reference and reads the secret itself.

/** What a worker needs to call a provider. */
export interface ProviderTarget {
  id: string;
  kind: ProviderKind;
  baseUrl: string;
  /** Allow-listed non-secret headers from the provider record. */
  hints: Readonly<Record<string, string>>;
  timeouts: { connectMs: number; headMs: number; idleMs: number };
}

export interface ModelsListTask {
  kind: 'models.list';
  target: ProviderTarget;
  credentialRef: string | null;
}

export type ModelsListResult =
  | { kind: 'models.list'; ok: true; models: UpstreamModel[]; withheld: number; slots?: number }
  | { kind: 'models.list'; ok: false; error: ErrorPayload };

export type ProxyTask = ModelsListTask;
export type ProxyResult = ModelsListResult;
