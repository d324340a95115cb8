import { Type, type Static } from '@sinclair/typebox';
import { SCOPES, type Scope } from '../scopes.ts';
import { compile } from '../validate.ts';

export const TOKEN_PREFIX = 'sk-svc-';
/** `sk-svc-` and 43 base64url characters: 256 random bits. */
export const TOKEN_SHAPE = /^sk-svc-[A-Za-z0-9_-]{43}$/;

const Name = Type.String({ minLength: 1, maxLength: 100 });
const Scopes = Type.Array(Type.Union(SCOPES.map((s) => Type.Literal(s))), {
  minItems: 1,
  maxItems: SCOPES.length,
  uniqueItems: true,
});
const ExpiresAt = Type.Union([Type.String({ maxLength: 64 }), Type.Null()]);

export const TokenCreateSchema = Type.Object(
  {
    name: Name,
    scopes: Type.Optional(Scopes),
    expiresAt: Type.Optional(ExpiresAt),
    serviceAccountId: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 160 }), Type.Null()])),
  },
  { additionalProperties: false },
);
export type TokenCreate = Static<typeof TokenCreateSchema>;
export const checkTokenCreate = compile(TokenCreateSchema);

export const TokenUpdateSchema = Type.Object(
  { name: Type.Optional(Name), scopes: Type.Optional(Scopes), expiresAt: Type.Optional(ExpiresAt) },
  { additionalProperties: false },
);
export type TokenUpdate = Static<typeof TokenUpdateSchema>;
export const checkTokenUpdate = compile(TokenUpdateSchema);

/** What any route may show of a token: never the secret, never its hash. */
export interface TokenView {
  id: string;
  name: string;
  scopes: Scope[];
  prefix: string;
  serviceAccountId: string | null;
  createdAt: string;
  lastUsedAt: string | null;
  expiresAt: string | null;
}

/** New tokens default to the least privilege an agent needs. */
export const DEFAULT_TOKEN_SCOPES: Scope[] = ['inference'];
