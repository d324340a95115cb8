import type { Logger } from 'pino';
import type { AuditActorType } from '../../protocol/http/audit.ts';
import type { RuntimeModelList } from '../../protocol/http/runtime.ts';
import type { ProviderKind } from '../../protocol/providers.ts';
import type { LibraryChange } from './library-watch.ts';
import { listRuntimeModels } from './library.ts';

// First-start convenience: a service with no `embedded` provider and GGUF files in its models directory gets
// one, so those files are served with no API call. An empty library creates nothing: a service used only as
// a gateway keeps exactly the providers it was given. The provider's listing is read before the listener opens,
// so the first GET /v1/models already shows the library.

export const EMBEDDED_PROVIDER_ID = 'embedded';

/** The slice of the provider service the bootstrap needs (kept structural: workers/ does not import edge/). */
export interface EmbeddedBootstrapProviders {
  list(): readonly { id: string; kind: ProviderKind; enabled: boolean }[];
  create(
    input: { id: string; kind: 'embedded' },
    actor: { actorType: AuditActorType; actorId: string },
    requestId: string,
  ): Promise<unknown>;
  refreshModels(id: string, actor: null, requestId: null): Promise<unknown>;
}

/**
 * `create: false` only re-lists: once this run has seen an `embedded` provider, one the user deleted stays
 * deleted until the next start, however the library changes.
 */
export async function ensureEmbeddedProvider(
  providers: EmbeddedBootstrapProviders,
  modelsDirectory: string,
  log: Logger,
  create = true,
): Promise<void> {
  const library = create ? await listRuntimeModels(modelsDirectory).catch(() => []) : [];
  if (library.length > 0 && !providers.list().some((p) => p.kind === 'embedded')) {
    try {
      await providers.create(
        { id: EMBEDDED_PROVIDER_ID, kind: 'embedded' },
        { actorType: 'system', actorId: 'switchyard' },
        'startup',
      );
      log.info({ providerId: EMBEDDED_PROVIDER_ID }, 'created the embedded provider for the local model library');
    } catch (err) {
      // A provider of another kind may hold the ID; the library then waits for one created by hand.
      log.warn({ err: String(err).slice(0, 200) }, 'could not create the embedded provider');
      return;
    }
  }
  // Header reads only; a library that cannot be read is logged and retried on the refresh timer.
  for (const p of providers.list()) {
    if (p.kind !== 'embedded' || !p.enabled) continue;
    await providers
      .refreshModels(p.id, null, null)
      .catch((err: unknown) =>
        log.warn({ providerId: p.id, err: String(err).slice(0, 200) }, 'could not list the model library'),
      );
  }
}

/**
 * Keeps the embedded providers' listings in step with a changing library. A library that was empty at start
 * gets its provider when its first file arrives; once this run has seen an `embedded` provider, one the user
 * deletes stays deleted until the next start.
 */
export function followLibrary(providers: () => EmbeddedBootstrapProviders, modelsDirectory: () => string, log: Logger) {
  let seen = false;
  const look = () =>
    (seen ||= providers()
      .list()
      .some((p) => p.kind === 'embedded'));
  return {
    async atStart(): Promise<void> {
      await ensureEmbeddedProvider(providers(), modelsDirectory(), log);
      look();
    },
    changed(list: RuntimeModelList, change: LibraryChange): void {
      ensureEmbeddedProvider(providers(), modelsDirectory(), log, !look()).then(
        () => {
          look();
          log.info({ files: list.data.length, ...change }, 're-listed the changed model library');
        },
        (err: unknown) => log.warn({ err: String(err).slice(0, 200) }, 'could not re-list the model library'),
      );
    },
  };
}
