import { Type, type Static } from '@sinclair/typebox';
import { FAMILIES, type EndpointFamily } from '../families.ts';
import { compile } from '../validate.ts';

// Presets (docs/api.md, Presets): a named target model with default parameters and an
// optional system prompt, addressed as `@preset/<slug>`.

export const PRESET_PREFIX = '@preset/';
export const SLUG_SHAPE = '^[a-z0-9][a-z0-9-]{0,62}$';

const Slug = Type.String({ pattern: SLUG_SHAPE });
const DisplayName = Type.String({ minLength: 1, maxLength: 200 });
// A preset names a catalog model or alias; `@` names (presets, packs) cannot be nested.
const Target = Type.String({ minLength: 1, maxLength: 512, pattern: '^[^@]' });
// Values are provider-shaped (`stop` may be a list, `response_format` an object); names are checked
// against PRESET_PARAMETERS by the service, which knows the target's families.
const Parameters = Type.Record(Type.String({ minLength: 1, maxLength: 64 }), Type.Unknown(), { maxProperties: 32 });
const System = Type.Union([Type.String({ minLength: 1, maxLength: 100_000 }), Type.Null()]);
const FamilyScope = Type.Array(Type.Union(FAMILIES.map((f) => Type.Literal(f))), {
  minItems: 1,
  maxItems: FAMILIES.length,
  uniqueItems: true,
});

export const PresetCreateSchema = Type.Object(
  {
    slug: Slug,
    displayName: Type.Optional(DisplayName),
    model: Target,
    parameters: Type.Optional(Parameters),
    system: Type.Optional(System),
    familyScope: FamilyScope,
  },
  { additionalProperties: false },
);
export type PresetCreate = Static<typeof PresetCreateSchema>;
export const checkPresetCreate = compile(PresetCreateSchema);

export const PresetUpdateSchema = Type.Object(
  {
    displayName: Type.Optional(DisplayName),
    model: Type.Optional(Target),
    parameters: Type.Optional(Parameters),
    system: Type.Optional(System),
    familyScope: Type.Optional(FamilyScope),
  },
  { additionalProperties: false },
);
export type PresetUpdate = Static<typeof PresetUpdateSchema>;
export const checkPresetUpdate = compile(PresetUpdateSchema);

/** A preset as routes show it and the store keeps it. */
export interface PresetView {
  slug: string;
  displayName: string;
  model: string;
  parameters: Record<string, unknown>;
  system: string | null;
  familyScope: EndpointFamily[];
  createdAt: string;
  updatedAt: string;
}
