import type { GatewayOp } from '../../../protocol/gateway.ts';
import type { UpstreamModel } from '../../../protocol/providers.ts';

export type { ProviderTarget } from '../../../protocol/messages.ts';
import type { ProviderTarget } from '../../../protocol/messages.ts';

export interface HttpRequestSpec {
  method: 'GET' | 'POST';
  url: string;
  headers: Record<string, string>;
  body?: string;
}

export interface ModelListAdapter {
  /** The request for the first page (`cursor` null) or for the page after `cursor`. */
  listRequest(target: ProviderTarget, credential: string | null, cursor: string | null): HttpRequestSpec;
  /**
   * One page of the upstream's answer. `next` is the cursor of the following page, or null at the end.
   * Throws ServiceError('UPSTREAM_ERROR') when the page is not the shape the provider documents.
   */
  parseList(body: unknown): { models: UpstreamModel[]; next: string | null };
  /**
   * llama-server: the request for its properties (GET /props), read after the list, and the parallel slots its
   * body names (null when it names none). A failure there never fails the list.
   */
  slots?: {
    request(target: ProviderTarget, credential: string | null): HttpRequestSpec;
    parse(body: unknown): number | null;
  };
}

export interface GatewayAdapter {
  /** The upstream URL of an operation, or null when this kind does not serve it. */
  url(op: GatewayOp, target: ProviderTarget, params: Readonly<Record<string, string>>, query: string): string | null;
  /** Whether a streamed chat completion may be asked for its usage (`stream_options.include_usage`). */
  streamUsage: boolean;
  /** Rewrites an upstream answer into the contract's own shape, for the operations that have one (rerank). */
  normalize?(op: GatewayOp, body: unknown, clientModel: string): unknown;
}

export interface ProviderAdapter {
  /** Headers that authenticate to the upstream with the stored credential (none when it is null). */
  authHeaders(credential: string | null): Record<string, string>;
  /** How the kind lists its models; null where the service itself knows them (embedded). */
  models: ModelListAdapter | null;
  /** The inference routes; null where the service serves the kind itself (embedded). */
  gateway: GatewayAdapter | null;
}
