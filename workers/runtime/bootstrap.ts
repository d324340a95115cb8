import type { Logger } from 'pino';
import type { AuditActorType } from '../../protocol/http/audit.ts';
import type { ProviderKind } from '../../protocol/providers.ts';
import { listRuntimeModels } from './library.ts';

// First-start convenience: a service with no `embedded` provider and GGUF files in its models directory gets
// one, so those files are served with no API call. An empty library creates nothing: a service used only as
// a gateway keeps exactly the providers it was given. The provider's listing is read before the listener opens,
// so the first GET /v1/models already shows the library.

export const EMBEDDED_PROVIDER_ID = 'embedded';

/** The slice of the provider service the bootstrap needs (kept structural: workers/ does not import edge/). */
export interface EmbeddedBootstrapProviders {
  list(): readonly { id: string; kind: ProviderKind; enabled: boolean }[];
  create(input: { id: string; kind: 'embedded' }, actor: { actorType: AuditActorType; actorId: string }, requestId: string): Promise<unknown>;
  refreshModels(id: string, actor: null, requestId: null): Promise<unknown>;
}

export async function ensureEmbeddedProvider(providers: EmbeddedBootstrapProviders, modelsDirectory: string, log: Logger): Promise<void> {
  const library = await listRuntimeModels(modelsDirectory).catch(() => []);
  if (library.length > 0 && !providers.list().some((p) => p.kind === 'embedded')) {
    try {
      await providers.create({ id: EMBEDDED_PROVIDER_ID, kind: 'embedded' }, { actorType: 'system', actorId: 'switchyard' }, 'startup');
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
    await providers.refreshModels(p.id, null, null).catch((err: unknown) => log.warn({ providerId: p.id, err: String(err).slice(0, 200) }, 'could not list the model library'));
  }
}
