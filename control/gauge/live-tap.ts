import type { GaugeActor } from '../../workers/gauge/actor.ts';
import type { CapacityTracker } from '../capacity.ts';
import type { Catalog } from '../../protocol/catalog-entries.ts';

// Gauge's live-headers source hears what Smart Route's capacity tracker hears: the rate-limit headers on each
// relayed answer head. The tracker is wrapped, not changed, and Gauge gets the provider record the model
// belongs to (its ID and kind), so readings are per provider record and need no polling.
export function tapCapacity(
  capacity: CapacityTracker,
  catalog: () => Catalog,
  gauge: Pick<GaugeActor, 'observe'>,
): CapacityTracker {
  return {
    read: (modelId, now) => capacity.read(modelId, now),
    observeRateLimited: (modelId, retryAfterSeconds, now) =>
      capacity.observeRateLimited(modelId, retryAfterSeconds, now),
    entries: (now) => capacity.entries(now),
    observeHeaders(modelId, headers, now) {
      capacity.observeHeaders(modelId, headers, now);
      const current = catalog();
      const model = current.get(modelId);
      const provider = model && current.provider(model.providerId);
      if (provider) gauge.observe(provider.id, provider.kind, headers);
    },
  };
}
