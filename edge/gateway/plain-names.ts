import { ServiceError } from '../../protocol/errors.ts';
import { directModelId } from '../../protocol/http/catalog.ts';
import type { Catalog, ResolvedModel } from '../../protocol/catalog.ts';
import type { UnresolvedName } from './resolve.ts';

// Agents send the provider's own model names (`claude-sonnet-4-5-20250929`, `gpt-5-codex`), not catalog IDs.
// After a direct ID and an alias (the contract's order, unchanged), such a plain name is looked up as
// `<provider>/<name>`: in `routing.providerOrder` first, in that order; else in every provider, taken only
// when exactly one has it routable. Two or more: 404 naming them, so the person can set an order or an alias.

const CANDIDATES_SHOWN = 5;

export function plainNames(providerOrder: () => readonly string[]): UnresolvedName {
  return (catalog: Catalog, name: string): ResolvedModel | null => {
    // A plain name has no provider prefix of its own to strip, and `@` names presets and route packs.
    if (name.startsWith('@') || name.length > 512) return null;
    for (const providerId of providerOrder()) {
      const found = catalog.resolve(directModelId(providerId, name));
      if (found !== null) return found;
    }
    const found: ResolvedModel[] = [];
    for (const providerId of catalog.providerIds()) {
      const one = catalog.resolve(directModelId(providerId, name));
      if (one !== null) found.push(one);
    }
    if (found.length <= 1) return found[0] ?? null;
    const ids = found.map((f) => f.model.id).sort();
    throw new ServiceError(
      'MODEL_NOT_FOUND',
      `\`${name.slice(0, 200)}\` is offered by ${ids.length} providers ` +
        `(${ids.slice(0, CANDIDATES_SHOWN).join(', ')}): name one by its ID, add an alias, or set ` +
        `routing.providerOrder.`,
      { param: 'model', details: { candidates: ids.slice(0, CANDIDATES_SHOWN) } },
    );
  };
}

/** The first second chance that knows the name; each may throw a clearer error of its own. */
export function firstOf(...chances: UnresolvedName[]): UnresolvedName {
  return (catalog, name) => {
    for (const chance of chances) {
      const found = chance(catalog, name);
      if (found !== null) return found;
    }
    return null;
  };
}
