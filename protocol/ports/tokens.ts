import type { Actor } from '../actor.ts';
import type { TokenCreate, TokenUpdate, TokenView } from '../http/tokens.ts';
import type { Principal } from '../principal.ts';
import { methodsOf } from './methods.ts';

// Local tokens as the edge reaches them. `authenticate` runs on every request before routing, so it stays
// synchronous: whatever serves it holds the token index where the edge runs. The rest are requests with an
// answer, typed so that a MessagePort implementation (the answer a promise) fits.

export type AuthResult = { ok: true; principal: Principal } | { ok: false; reason: 'unknown' | 'expired' };

export interface TokenAuthPort {
  authenticate(secret: string): AuthResult;
}

export interface TokensPort {
  list(): TokenView[] | Promise<TokenView[]>;
  get(id: string): TokenView | Promise<TokenView>;
  create(input: TokenCreate, actor: Actor, requestId: string): Promise<{ token: TokenView; secret: string }>;
  update(id: string, patch: TokenUpdate, actor: Actor, requestId: string): Promise<TokenView>;
  revoke(id: string, actor: Actor, requestId: string): Promise<TokenView>;
}

export const TOKENS_METHODS = methodsOf<TokensPort>()(['list', 'get', 'create', 'update', 'revoke']);
