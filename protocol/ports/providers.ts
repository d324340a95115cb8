import type { Actor } from '../actor.ts';
import type { ProviderRecord } from '../catalog.ts';
import type {
  CredentialCreate,
  CredentialPoolState,
  CredentialUpdate,
  CredentialView,
  ProviderCreate,
  ProviderUpdate,
  ProviderView,
} from '../http/providers.ts';
import type { ModelListCache } from '../providers.ts';
import { methodsOf } from './methods.ts';

// Providers as the edge reaches them.

export interface TestOutcome {
  ok: boolean;
  latencyMs: number;
  modelCount: number | null;
  error: { code: string; message: string; details: Record<string, unknown> } | null;
}

export interface ProvidersPort {
  list(): ProviderView[] | Promise<ProviderView[]>;
  get(id: string): ProviderView | Promise<ProviderView>;
  record(id: string): ProviderRecord | undefined | Promise<ProviderRecord | undefined>;
  create(input: ProviderCreate, actor: Actor, requestId: string): Promise<ProviderView>;
  /** `mayRedirect`: the caller may send the stored credential to a new `baseUrl` (protocol/credential-redirect.ts). */
  update(
    id: string,
    patch: ProviderUpdate,
    actor: Actor,
    requestId: string,
    mayRedirect: boolean,
  ): Promise<ProviderView>;
  remove(id: string, actor: Actor, requestId: string): Promise<void>;
  test(id: string, actor: Actor, requestId: string): Promise<TestOutcome>;
  refreshModels(id: string, actor: Actor | null, requestId: string | null): Promise<ModelListCache>;

  /** A provider's credentials, in the order added (live figures at their defaults: see `livePool`). */
  listCredentials(providerId: string): CredentialView[] | Promise<CredentialView[]>;
  addCredential(providerId: string, input: CredentialCreate, actor: Actor, requestId: string): Promise<CredentialView>;
  updateCredential(
    providerId: string,
    credentialId: string,
    patch: CredentialUpdate,
    actor: Actor,
    requestId: string,
  ): Promise<CredentialView>;
  removeCredential(providerId: string, credentialId: string, actor: Actor, requestId: string): Promise<void>;
  /**
   * The upstream refused the key (`status` 401 or 403): it is set aside until it is edited, the change audited,
   * announced (`credential.rejected`) and on every edge thread. False when it was set aside already, or when
   * `seenUpdatedAt` (the key's `updatedAt` as the refused call read it) is older than the key: an edit since, which
   * a late report must not undo.
   */
  rejectCredential(providerId: string, credentialId: string, status: number, seenUpdatedAt?: number): Promise<boolean>;
  /** What the key pool knows of each of a provider's keys now, by credential ID; nothing when it knows none. */
  livePool?(
    providerId: string,
  ): Map<string, CredentialPoolState> | undefined | Promise<Map<string, CredentialPoolState> | undefined>;
}

export const PROVIDERS_METHODS = methodsOf<ProvidersPort>()([
  'list',
  'get',
  'record',
  'create',
  'update',
  'remove',
  'test',
  'refreshModels',
  'listCredentials',
  'addCredential',
  'updateCredential',
  'removeCredential',
  'rejectCredential',
  'livePool',
]);

/** What an edge thread calls on the control thread's providers port (service/edge-threads.ts serves it). */
export type EdgeProvidersPort = Pick<ProvidersPort, 'rejectCredential'>;
export const EDGE_PROVIDERS_METHODS = methodsOf<EdgeProvidersPort>()(['rejectCredential']);
