import { Type, type Static } from '@sinclair/typebox';
import { FAMILIES, type EndpointFamily } from '../families.ts';
import { compile } from '../validate.ts';
import { PROVIDER_ID_MAX } from './providers.ts';

// Aliases are plain names; they may hold `/` (tools often use vendor/model names) because a direct ID of
// the same spelling simply wins at resolution. `@` starts preset and route-pack names, so not an alias.
export const ALIAS_SHAPE = '^[A-Za-z0-9][A-Za-z0-9._:/-]{0,199}$';

/** The longest upstream model ID the catalog holds, explicit or listed by a provider (docs/api.md, Catalog). */
export const UPSTREAM_MODEL_ID_MAX = 400;
/** So no direct model ID is longer than this: `<providerId>/<upstreamModelId>`. */
export const MODEL_ID_MAX = PROVIDER_ID_MAX + 1 + UPSTREAM_MODEL_ID_MAX;

const Family = Type.Union(FAMILIES.map((f) => Type.Literal(f)));
const Families = Type.Array(Family, { minItems: 1, maxItems: FAMILIES.length, uniqueItems: true });
const Aliases = Type.Array(Type.String({ pattern: ALIAS_SHAPE }), { maxItems: 32, uniqueItems: true });
const Price = Type.Number({ minimum: 0, maximum: 1_000_000 });
const Pricing = Type.Union([
  Type.Object(
    {
      inputPerMTok: Price,
      outputPerMTok: Price,
      cachedInputPerMTok: Type.Optional(Type.Union([Price, Type.Null()])),
      cacheWritePerMTok: Type.Optional(Type.Union([Price, Type.Null()])),
      cacheWrite1hPerMTok: Type.Optional(Type.Union([Price, Type.Null()])),
      currency: Type.Optional(Type.String({ pattern: '^[A-Z]{3}$' })),
    },
    { additionalProperties: false },
  ),
  Type.Null(),
]);
const Acceleration = Type.Union([
  Type.Object(
    {
      mode: Type.Union([Type.Literal('off'), Type.Literal('draft')]),
      draftModelId: Type.Optional(Type.Union([Type.String({ minLength: 1, maxLength: 512 }), Type.Null()])),
    },
    { additionalProperties: false },
  ),
  Type.Null(),
]);
const ContextWindow = Type.Union([Type.Integer({ minimum: 1, maximum: 100_000_000 }), Type.Null()]);

// What a record's owner may set; the identity fields (provider, upstream ID) come only at creation.
const EDITABLE = {
  displayName: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
  families: Type.Optional(Families),
  aliases: Type.Optional(Aliases),
  hidden: Type.Optional(Type.Boolean()),
  contextWindow: Type.Optional(ContextWindow),
  pricing: Type.Optional(Pricing),
  acceleration: Type.Optional(Acceleration),
};

export const ModelCreateSchema = Type.Object(
  {
    providerId: Type.String({ minLength: 1, maxLength: PROVIDER_ID_MAX }),
    upstreamModelId: Type.String({ minLength: 1, maxLength: UPSTREAM_MODEL_ID_MAX }),
    ...EDITABLE,
  },
  { additionalProperties: false },
);
export type ModelCreate = Static<typeof ModelCreateSchema>;
export const checkModelCreate = compile(ModelCreateSchema);

export const ModelUpdateSchema = Type.Object(EDITABLE, { additionalProperties: false });
export type ModelUpdate = Static<typeof ModelUpdateSchema>;
export const checkModelUpdate = compile(ModelUpdateSchema);

export interface ModelPricing {
  inputPerMTok: number;
  outputPerMTok: number;
  cachedInputPerMTok: number | null;
  /** styleB prompt-cache writes (cache_creation_input_tokens); null when not priced (billed as plain input). */
  cacheWritePerMTok: number | null;
  /** styleB 1-hour prompt-cache writes (cache_creation.ephemeral_1h_input_tokens); null: billed as plain input. */
  cacheWrite1hPerMTok: number | null;
  currency: string;
}

export interface ModelAcceleration {
  mode: 'off' | 'draft';
  draftModelId: string | null;
}

/** A catalog model record as routes show it. */
export interface ModelView {
  id: string;
  providerId: string;
  upstreamModelId: string;
  displayName: string;
  families: EndpointFamily[];
  /**
   * Families the model is also reachable through by protocol translation (protocol/translation.ts); derived, never
   * stored.
   */
  translatedFamilies?: EndpointFamily[];
  aliases: string[];
  hidden: boolean;
  source: 'explicit' | 'auto';
  contextWindow: number | null;
  pricing: ModelPricing | null;
  acceleration: ModelAcceleration | null;
  /**
   * Derived, read-only: the price the meter uses for the model's calls now, `pricing` when set, else the price
   * database's for its provider and upstream model ID; null when neither prices it.
   */
  effectivePricing?: ModelPricing | null;
  /** Where `effectivePricing` came from: `catalog`, the database as `<name>@<version>`, or null. */
  pricingSource?: 'catalog' | `${string}@${string}` | null;
}

export const directModelId = (providerId: string, upstreamModelId: string): string =>
  `${providerId}/${upstreamModelId}`;
