import type { Logger } from 'pino';
import type { UsageEvent } from '../../protocol/gateway.ts';
import type { ModelPricing } from '../../protocol/http/catalog.ts';
import type { CatalogReader } from '../../protocol/ports/catalog.ts';
import type { RequestLogSink } from '../../protocol/ports/request-log.ts';
import type { SmartRoutingPort } from '../../protocol/ports/smart-route.ts';
import type { ResponseRouteRepo } from '../../store/response-route-repo.ts';
import type { RelayPool } from '../../workers/shared/relay-sink.ts';
import type { Admission } from './admission.ts';
import type { KeyPool } from './key-pool.ts';
import type { UnresolvedName } from './resolve.ts';

// What the gateway's routes (routes.ts) are built from.

export interface GatewayDeps {
  catalog: CatalogReader;
  pool: RelayPool;
  responses: ResponseRouteRepo;
  /**
   * The meter: each call's usage, never prompts, answers or headers. Told before the answer's last bytes, so it
   * journals the record then (store/usage-journal.ts).
   */
  meterUsage?(event: UsageEvent): void;
  /** The rest of each call's bookkeeping (metrics, activity), after this turn's answers are written. */
  recordUsage?(event: UsageEvent): void;
  log: Logger;
  /** Directory for multipart prefixes that spill out of memory before the model field arrives. */
  spillDir: string;
  /** Presets, route packs and the signals their strategies read; without it `@` names do not resolve. */
  smart?: SmartRoutingPort;
  /** A second chance for names the catalog does not resolve (resolve.ts). */
  unresolved?: UnresolvedName;
  /** Enforced limits: each call reserves its worst case before it goes upstream (admission.ts). */
  admission?: Admission;
  /** A catalog model's USD price, for dollar limits. */
  priceOf?(modelId: string): ModelPricing | null;
  /** Chooses among a provider's keys (key-pool.ts); without it a call takes the provider's first usable key. */
  keyPool?: KeyPool;
  /** Tells the control plane that the upstream refused a key (401/403). */
  rejectCredential?(providerId: string, credentialId: string, status: number, seenUpdatedAt: number): Promise<unknown>;
  /** The request log this thread writes, opt in (docs/api.md, Request log); absent: nothing is captured. */
  requestLog?: RequestLogSink;
}
