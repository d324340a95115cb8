import { ServiceError } from '../../protocol/errors.ts';
import type { EndpointFamily } from '../../protocol/families.ts';
import type { PresetView } from '../../protocol/http/presets.ts';
import { parametersFor, PRESET_SCOPE_GROUPS, PRESET_SYSTEM_FAMILIES } from '../../protocol/presets.ts';
import type { Catalog, ResolvedModel } from '../../protocol/catalog-entries.ts';
import type { UsablePreset } from '../../protocol/smart-route.ts';
import { familyWords, familyWordsAndId } from '../../protocol/words.ts';

// The rules a preset must satisfy against the catalog as it is now. Writes (and /v1/presets/validate) throw
// the first violation; resolution and discovery re-check usability, since the target may have been hidden
// or its provider disabled after the preset was saved.

type PresetShape = Pick<PresetView, 'model' | 'parameters' | 'system' | 'familyScope'>;

const invalid = (param: string, message: string) => new ServiceError('INVALID_REQUEST', message, { param });

export { parametersFor };

export function checkPreset(p: PresetShape, catalog: Catalog): ResolvedModel {
  const target = catalog.resolve(p.model);
  if (!target) throw invalid('model', `\`${p.model.slice(0, 200)}\` names no routable model or alias.`);
  const group = PRESET_SCOPE_GROUPS.find((g) =>
    p.familyScope.every((f) => (g.families as readonly EndpointFamily[]).includes(f)),
  );
  if (!group) {
    throw invalid(
      'familyScope',
      `familyScope must lie inside one group: ` +
        `${PRESET_SCOPE_GROUPS.map((g) => `${g.id} (${g.families.map(familyWordsAndId).join(', ')})`).join('; ')}.`,
    );
  }
  p.familyScope.forEach((f, i) => {
    if (!target.model.families.includes(f))
      throw invalid(`familyScope[${i}]`, `\`${target.model.id}\` does not support ${familyWordsAndId(f)}.`);
  });
  const allowed = new Set(p.familyScope.flatMap((f) => parametersFor(f)));
  for (const name of Object.keys(p.parameters)) {
    if (!allowed.has(name)) {
      throw invalid(
        `parameters.${name}`,
        `\`${name.slice(0, 64)}\` is not a preset parameter of ${p.familyScope.map(familyWords).join(', ')}; ` +
          `see PRESET_PARAMETERS in the capabilities document.`,
      );
    }
  }
  if (p.system !== null) {
    if (!p.familyScope.every((f) => PRESET_SYSTEM_FAMILIES.includes(f))) {
      throw invalid('system', `A system prompt applies only to ${PRESET_SYSTEM_FAMILIES.join(', ')}.`);
    }
    // Both would become the responses `instructions`; refusing is clearer than picking one silently.
    if ('instructions' in p.parameters)
      throw invalid('parameters.instructions', 'Set `system` or `parameters.instructions`, not both.');
  }
  return target;
}

export type { UsablePreset };

/** The preset as the gateway may use it now, or null when its target is hidden, disabled or gone. */
export function usablePreset(preset: PresetView, catalog: Catalog): UsablePreset | null {
  const target = catalog.resolve(preset.model);
  if (!target) return null;
  const families = preset.familyScope.filter((f) => target.model.families.includes(f));
  return families.length === 0 ? null : { preset, target, families };
}
