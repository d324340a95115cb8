import type { Actor } from '../actor.ts';
import type { Subscriber } from '../events.ts';
import type {
  PairingCreate,
  PairingView,
  ServiceAccountCreate,
  ServiceAccountUpdate,
  ServiceAccountView,
} from '../http/service-accounts.ts';
import type { TokenView } from '../http/tokens.ts';
import type { Scope } from '../scopes.ts';
import { methodsOf } from './methods.ts';

// Service accounts and pairing as the edge reaches them.

export interface ServiceAccountsPort {
  list(): ServiceAccountView[] | Promise<ServiceAccountView[]>;
  get(id: string): ServiceAccountView | Promise<ServiceAccountView>;
  create(input: ServiceAccountCreate, actor: Actor, requestId: string): Promise<ServiceAccountView>;
  update(id: string, patch: ServiceAccountUpdate, actor: Actor, requestId: string): Promise<ServiceAccountView>;
  remove(id: string, actor: Actor, requestId: string): Promise<ServiceAccountView>;
}

export interface PairingPort {
  /** Registers a request; its stream (read where the edge runs) already holds `pairing.pending`. */
  request(
    input: PairingCreate,
  ): { view: PairingView; stream: Subscriber } | Promise<{ view: PairingView; stream: Subscriber }>;
  list(): PairingView[] | Promise<PairingView[]>;
  approve(
    id: string,
    scopes: Scope[] | undefined,
    actor: Actor,
    requestId: string,
  ): Promise<{ id: string; approved: true; token: TokenView }>;
  deny(id: string): { id: string; denied: true } | Promise<{ id: string; denied: true }>;
}

export const SERVICE_ACCOUNTS_METHODS = methodsOf<ServiceAccountsPort>()(['list', 'get', 'create', 'update', 'remove']);
