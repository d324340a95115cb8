import { ServiceError } from '../protocol/errors.ts';
import type { Catalog, CatalogModel } from '../protocol/catalog.ts';
import type { EndpointFamily } from '../protocol/families.ts';
import { KINDS } from '../protocol/providers.ts';
import { familyWordsAndId, withArticle } from '../protocol/words.ts';
import type { ModelRecord } from '../store/model-repo.ts';
import type { ProviderRecord } from '../store/provider-repo.ts';

// What a catalog model's writes check beyond the schema (control/catalog-service.ts): its families against its
// provider's kind, its aliases against the catalog and the writes under way, its acceleration, and whether a
// model may be deleted at all.

const invalid = (param: string, message: string) => new ServiceError('INVALID_REQUEST', message, { param });

/** The checks of a model record that depend on the provider and the rest of the catalog. */
export function checkRecord(
  record: ModelRecord,
  provider: ProviderRecord,
  catalog: Pick<Catalog, 'aliasOwner' | 'get'>,
  pendingAliases: ReadonlyMap<string, { id: string }>,
): void {
  const kindFamilies: readonly EndpointFamily[] = KINDS[provider.kind].families;
  record.families.forEach((f, i) => {
    if (!kindFamilies.includes(f))
      throw invalid(
        `families[${i}]`,
        `${withArticle(provider.kind, true)} provider cannot serve ${familyWordsAndId(f)}.`,
      );
  });
  record.aliases.forEach((alias, i) => {
    const owner = pendingAliases.get(alias)?.id ?? catalog.aliasOwner(alias);
    if (owner !== undefined && owner !== record.id) {
      throw new ServiceError('CONFLICT', `Alias \`${alias}\` already belongs to \`${owner}\`.`, {
        param: `aliases[${i}]`,
      });
    }
  });
  const acc = record.acceleration;
  if (acc !== null) {
    if (provider.kind !== 'embedded' && provider.kind !== 'llamacpp') {
      throw invalid('acceleration', 'Speculative decoding is available for llamacpp and embedded models only.');
    }
    if (acc.mode === 'draft') {
      if (acc.draftModelId === null) throw invalid('acceleration.draftModelId', 'Draft mode needs a draftModelId.');
      const draft = catalog.get(acc.draftModelId);
      if (!draft || draft.providerId !== provider.id || draft.id === record.id) {
        throw invalid('acceleration.draftModelId', 'The draft model must be another model of the same provider.');
      }
    }
  }
}

export function checkRemovable(id: string, current: CatalogModel, catalog: Pick<Catalog, 'all'>): void {
  if (current.source === 'auto') {
    throw new ServiceError(
      'CONFLICT',
      'Auto-proxied models cannot be deleted; hide them, or turn off the provider’s autoProxyModels.',
      {
        param: 'id',
      },
    );
  }
  const drafts = catalog.all().filter((m) => m.acceleration?.draftModelId === id);
  if (drafts.length > 0) {
    throw new ServiceError('CONFLICT', `\`${id}\` is the draft model of ${drafts.length} other model(s).`, {
      param: 'id',
    });
  }
}
