import { Type, type Static } from '@sinclair/typebox';
import { PROVIDER_KINDS, type ProviderKind } from '../providers.ts';
import { compile } from '../validate.ts';

/** The longest provider ID: the first part of every direct model ID. */
export const PROVIDER_ID_MAX = 63;
const Id = Type.String({ minLength: 1, maxLength: PROVIDER_ID_MAX });
const DisplayName = Type.String({ minLength: 1, maxLength: 100 });
const BaseUrl = Type.String({ minLength: 1, maxLength: 2048 });
// Write-only. Checked for shape only; it is never echoed, logged or stored outside the vault.
const Credential = Type.String({ minLength: 1, maxLength: 16_384 });
const Hints = Type.Record(Type.String(), Type.String({ maxLength: 1024 }), { maxProperties: 16 });
const Timeouts = Type.Object(
  {
    connectMs: Type.Optional(Type.Integer({ minimum: 100, maximum: 120_000 })),
    headMs: Type.Optional(Type.Integer({ minimum: 1000, maximum: 3_600_000 })),
    idleMs: Type.Optional(Type.Integer({ minimum: 1000, maximum: 3_600_000 })),
  },
  { additionalProperties: false },
);

// Fields both a create and an update may set; `id` and `kind` are fixed at creation.
const EDITABLE = {
  displayName: Type.Optional(DisplayName),
  baseUrl: Type.Optional(Type.Union([BaseUrl, Type.Null()])),
  enabled: Type.Optional(Type.Boolean()),
  autoProxyModels: Type.Optional(Type.Boolean()),
  hints: Type.Optional(Hints),
  timeouts: Type.Optional(Timeouts),
};

export const ProviderCreateSchema = Type.Object(
  {
    id: Type.Optional(Id),
    kind: Type.Union(PROVIDER_KINDS.map((k) => Type.Literal(k))),
    ...EDITABLE,
    credential: Type.Optional(Credential),
  },
  { additionalProperties: false },
);
export type ProviderCreate = Static<typeof ProviderCreateSchema>;
export const checkProviderCreate = compile(ProviderCreateSchema);

export const ProviderUpdateSchema = Type.Object(
  {
    ...EDITABLE,
    /** A string replaces the stored credential; null clears it. */
    credential: Type.Optional(Type.Union([Credential, Type.Null()])),
  },
  { additionalProperties: false },
);
export type ProviderUpdate = Static<typeof ProviderUpdateSchema>;
export const checkProviderUpdate = compile(ProviderUpdateSchema);

export interface ProviderTimeouts {
  connectMs: number;
  headMs: number;
  idleMs: number;
}

/** What routes show of a provider: `credentialConfigured`, never the credential or its reference. */
export interface ProviderView {
  id: string;
  kind: ProviderKind;
  displayName: string;
  baseUrl: string | null;
  enabled: boolean;
  autoProxyModels: boolean;
  credentialConfigured: boolean;
  hints: Record<string, string>;
  timeouts: ProviderTimeouts;
  createdAt: string;
  updatedAt: string;
}
