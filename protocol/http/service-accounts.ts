import { Type, type Static } from '@sinclair/typebox';
import { SCOPES } from '../scopes.ts';
import { compile } from '../validate.ts';

// Service accounts (non-human principals that own tokens) and pairing requests: bodies and answers.

const Name = Type.String({ minLength: 1, maxLength: 100 });
const Description = Type.Union([Type.String({ maxLength: 500 }), Type.Null()]);
const Scopes = Type.Array(Type.Union(SCOPES.map((s) => Type.Literal(s))), {
  minItems: 1,
  maxItems: SCOPES.length,
  uniqueItems: true,
});

export const ServiceAccountCreateSchema = Type.Object(
  { name: Name, description: Type.Optional(Description) },
  { additionalProperties: false },
);
export type ServiceAccountCreate = Static<typeof ServiceAccountCreateSchema>;
export const checkServiceAccountCreate = compile(ServiceAccountCreateSchema);

export const ServiceAccountUpdateSchema = Type.Object(
  { name: Type.Optional(Name), description: Type.Optional(Description) },
  { additionalProperties: false },
);
export type ServiceAccountUpdate = Static<typeof ServiceAccountUpdateSchema>;
export const checkServiceAccountUpdate = compile(ServiceAccountUpdateSchema);

export interface ServiceAccountView {
  id: string;
  name: string;
  description: string | null;
  /** How many live tokens name this account. */
  tokenCount: number;
  createdAt: string;
  updatedAt: string;
}

export const PairingCreateSchema = Type.Object(
  { clientName: Name, scopes: Type.Optional(Scopes) },
  { additionalProperties: false },
);
export type PairingCreate = Static<typeof PairingCreateSchema>;
export const checkPairingCreate = compile(PairingCreateSchema);

export const PairingApproveSchema = Type.Object({ scopes: Type.Optional(Scopes) }, { additionalProperties: false });
export type PairingApprove = Static<typeof PairingApproveSchema>;
export const checkPairingApprove = compile(PairingApproveSchema);

export interface PairingView {
  id: string;
  clientName: string;
  userCode: string;
  scopes: string[];
  createdAt: string;
  expiresAt: string;
}
