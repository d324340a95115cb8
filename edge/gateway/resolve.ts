import { ServiceError } from '../../protocol/errors.ts';
import { GATEWAY_OPS, type GatewayOp } from '../../protocol/gateway.ts';
import { translationFor, type TranslationKey } from '../../protocol/translation.ts';
import { checkCredential, type Catalog, type ResolvedModel } from '../../protocol/catalog.ts';
import { familyWords } from '../../protocol/words.ts';

// Steps 1-3 of the model resolution order (docs/api.md, Gateway), all on the main thread from memory: name the
// model, check its endpoint family, then the provider. Nothing here reads a credential.

const modelError = (code: 'MODEL_NOT_FOUND' | 'INVALID_REQUEST', message: string) =>
  new ServiceError(code, message, { param: 'model' });

/**
 * A second chance for a name the catalog does not resolve, owned by whoever knows more about it (the embedded
 * runtime: a name without `.gguf`, or a library file that is there but unhealthy). May throw a clearer error.
 */
export type UnresolvedName = (catalog: Catalog, name: string) => ResolvedModel | null;

/** A resolved model, and the protocol translation that reaches it when it does not list the op's family. */
export type RoutedModel = ResolvedModel & { translation?: TranslationKey };

export function resolveModel(
  catalog: Catalog,
  op: GatewayOp,
  name: unknown,
  options: { multipart?: boolean; unresolved?: UnresolvedName } = {},
): RoutedModel {
  if (typeof name !== 'string' || name === '') throw modelError('INVALID_REQUEST', '`model` is required.');
  if (name.startsWith('@')) {
    if (options.multipart) {
      throw modelError('INVALID_REQUEST', 'Multipart routes take a model ID or alias, not a preset or route pack.');
    }
    throw modelError('MODEL_NOT_FOUND', `No preset or route pack \`${name.slice(0, 200)}\`.`);
  }
  const resolved = catalog.resolve(name) ?? options.unresolved?.(catalog, name) ?? null;
  if (!resolved) {
    const known = catalog.get(name) ?? catalog.get(catalog.aliasOwner(name) ?? '');
    const provider = known && catalog.provider(known.providerId);
    if (known && !known.hidden && provider && !provider.enabled) {
      throw new ServiceError('PROVIDER_DISABLED', `The provider of \`${name.slice(0, 200)}\` is disabled.`, {
        param: 'model',
      });
    }
    throw modelError('MODEL_NOT_FOUND', `No model \`${name.slice(0, 200)}\`.`);
  }
  const family = GATEWAY_OPS[op].family;
  const translation = resolved.model.families.includes(family) ? null : translationFor(op, resolved.model.families);
  if (translation !== null) {
    checkCredential(resolved);
    return { ...resolved, translation: translation.key };
  }
  if (!resolved.model.families.includes(family)) {
    throw new ServiceError(
      'MODEL_ENDPOINT_NOT_SUPPORTED',
      `\`${name.slice(0, 200)}\` does not support ${familyWords(family)}.`,
      {
        param: 'model',
        details: { family, modelFamilies: resolved.model.families },
      },
    );
  }
  checkCredential(resolved);
  return resolved;
}
