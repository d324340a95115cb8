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
  /** Whether it holds any credential (usable or not). */
  credentialConfigured: boolean;
  /** How many credentials it holds. */
  credentials: number;
  hints: Record<string, string>;
  timeouts: ProviderTimeouts;
  createdAt: string;
  updatedAt: string;
}

// A provider's credentials (docs/api.md, Provider credentials): 1..N keys, each in the vault behind its own
// reference, shown by ID and label only.

export const CREDENTIAL_BOUNDS = {
  /** Keys one provider holds: each call considers every one of them. */
  count: 16,
  labelMax: 64,
  weightMax: 100,
  /** A credential ID: CREDENTIAL_ID_PREFIX and 26 base32 digits; anything longer names none. */
  idMax: 30,
} as const;

/**
 * Not `cred_`: that is the shape of a vault reference, which never leaves the service and which the redactor
 * replaces wherever it appears (protocol/redact.ts); an ID is shown, logged and named in limits.
 */
export const CREDENTIAL_ID_PREFIX = 'key_';
/** The label a provider's one key gets when it comes with the provider (POST or PATCH /v1/providers). */
export const DEFAULT_CREDENTIAL_LABEL = 'default';

const Label = Type.String({ minLength: 1, maxLength: CREDENTIAL_BOUNDS.labelMax });
const Weight = Type.Integer({ minimum: 1, maximum: CREDENTIAL_BOUNDS.weightMax });

export const CredentialCreateSchema = Type.Object(
  { label: Label, credential: Credential, weight: Type.Optional(Weight), enabled: Type.Optional(Type.Boolean()) },
  { additionalProperties: false },
);
export type CredentialCreate = Static<typeof CredentialCreateSchema>;
export const checkCredentialCreate = compile(CredentialCreateSchema);

export const CredentialUpdateSchema = Type.Object(
  {
    label: Type.Optional(Label),
    weight: Type.Optional(Weight),
    enabled: Type.Optional(Type.Boolean()),
    /** A new key for this credential: it replaces the stored one in the vault. */
    credential: Type.Optional(Credential),
  },
  { additionalProperties: false },
);
export type CredentialUpdate = Static<typeof CredentialUpdateSchema>;
export const checkCredentialUpdate = compile(CredentialUpdateSchema);

/** Remaining against a limit until a reset, as a provider's rate-limit headers say (null: not said). */
export interface HeadroomFigure {
  /** Null where the provider's headers did not say (OpenRouter gives no limit, some servers no remaining). */
  remaining: number | null;
  limit: number | null;
  resetsAt: string | null;
}

/** What the key pool knows of a key now; the provider service alone knows none of it. */
export interface CredentialLive {
  headroom: { requests: HeadroomFigure | null; tokens: HeadroomFigure | null } | null;
  /** Until when the key is cooling down after a 429 or a `retry-after` (RFC 3339); null when it is not. */
  coolingUntil: string | null;
  /** Agent sessions that keep this key. */
  sessions: number;
}

/** The key pool's figures of a key, as the control plane hands them to the credentials list. */
export interface CredentialPoolState extends CredentialLive {
  /** When a thread set the key aside since its last edit (RFC 3339), maybe before its record says so; else null. */
  refusedAt: string | null;
}

/** A credential as routes show it: never the key or its vault reference. */
export interface CredentialView extends CredentialLive {
  id: string;
  label: string;
  weight: number;
  enabled: boolean;
  /** The provider refused the key (401/403): set aside until it is edited. */
  rejected: boolean;
  rejectedAt: string | null;
  createdAt: string;
  updatedAt: string;
}
