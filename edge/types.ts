import type { Scope } from '../protocol/scopes.ts';

/** A request as the core sees it: no socket, so every edge function is testable in-process. */
export interface EdgeRequest {
  method: string;
  /** Path without the query string, as sent (percent-encoding intact). */
  path: string;
  /** Raw query string without the leading `?`. */
  query: string;
  /** Lower-case header names. */
  headers: Readonly<Record<string, string>>;
  remoteAddress: string;
  body: Buffer | null;
}

export type EdgeRequestHead = Omit<EdgeRequest, 'body'>;

export interface EdgeResponse {
  status: number;
  headers: Record<string, string>;
  body: string | Buffer;
}

/** Who is calling: the token's ID and scopes, never the secret. */
export interface Principal {
  tokenId: string;
  scopes: readonly Scope[];
  serviceAccountId: string | null;
}
