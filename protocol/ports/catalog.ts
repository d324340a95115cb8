import type { Actor } from '../actor.ts';
import type { Catalog } from '../catalog.ts';
import type { EndpointFamily } from '../families.ts';
import type { ModelCreate, ModelUpdate, ModelView } from '../http/catalog.ts';
import { methodsOf } from './methods.ts';

// The catalog as the edge reaches it. `current()` is the resolved catalog the gateway reads on every call: a
// copy the edge holds, so it stays synchronous; everything else is a request with an answer, typed so that
// an implementation over a MessagePort (the answer a promise) fits as well as the control plane's own service.

export interface CatalogFilter {
  providerId?: string;
  source?: 'explicit' | 'auto';
  family?: EndpointFamily;
  hidden?: boolean;
}

/** Where the edge reads the resolved catalog from. */
export interface CatalogReader {
  current(): Catalog;
}

export interface CatalogPort extends CatalogReader {
  list(filter: CatalogFilter): ModelView[] | Promise<ModelView[]>;
  get(id: string): ModelView | Promise<ModelView>;
  create(input: ModelCreate, actor: Actor, requestId: string): Promise<ModelView>;
  update(id: string, patch: ModelUpdate, actor: Actor, requestId: string): Promise<ModelView>;
  remove(id: string, actor: Actor, requestId: string): Promise<void>;
}

/** `body` is the parsed request body of an action that reads one (`benchmark`), else undefined. */
export type ModelActionRunner = (
  id: string,
  action: string,
  actor: Actor,
  requestId: string,
  wait: boolean,
  body?: unknown,
) => Promise<{ status: number; body: unknown }>;

/** The catalog's management calls; `current()` is the hot path's snapshot, read where the routes run. */
export type CatalogCalls = Omit<CatalogPort, 'current'>;
export const CATALOG_METHODS = methodsOf<CatalogCalls>()(['list', 'get', 'create', 'update', 'remove']);
