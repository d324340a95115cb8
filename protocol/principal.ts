import type { Scope } from './scopes.ts';

/** Who is calling: the token's ID and scopes, never the secret. */
export interface Principal {
  tokenId: string;
  scopes: readonly Scope[];
  serviceAccountId: string | null;
}
