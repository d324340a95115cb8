import type { Catalog } from '../protocol/catalog.ts';
import type { ModelPricing } from '../protocol/http/catalog.ts';
import type { AdmissionState } from '../protocol/ports/limits.ts';
import type { Follower } from '../state/followers.ts';
import { type EdgeAdmission, type GaugeShare, shareKey } from './edge-feed.ts';

// What admission reads on an edge thread besides the shared ledger (edge-admission.ts), as the control thread
// sends it: the enabled limits, whether the loop brake is on, the prices a `usd` limit reserves at (the
// catalog's, else the price database's, which only the control thread loads), and the Gauge readings a gate
// compares.

export interface EdgeAdmissionDeps {
  followAdmission(follower: Follower<AdmissionState>): () => void;
  catalog: { current(): Catalog; follow(follower: Follower<unknown>): () => void };
  priceOf(modelId: string): ModelPricing | null;
  gaugeShare(accountId: string, windowId: string): GaugeShare | null;
  /** Whether the limits' windows run on a clock of a test's own (ServiceOptions.now), not Date.now. */
  testClock: boolean;
  /** How often the Gauge readings are looked at while a gate is enabled. */
  gaugeEveryMs?: number;
}

/**
 * The control thread's side: tells `follower` what admission reads on an edge thread, now and after each change
 * (a limit's change waits for the thread's acknowledgement, as the limits family's write does).
 */
export function followEdgeAdmission(deps: EdgeAdmissionDeps, follower: Follower<EdgeAdmission>): () => void {
  let state: AdmissionState = { limits: [], brake: false };
  let prices: EdgeAdmission['prices'] = [];
  let gauge: EdgeAdmission['gauge'] = [];
  let gaugeText = '[]';
  const tell = () =>
    follower({
      limits: state.limits,
      handOver: state.brake || (deps.testClock && state.limits.length > 0),
      prices,
      gauge,
    });
  const pricesNow = (): EdgeAdmission['prices'] => {
    if (!state.limits.some((l) => l.record.metric === 'usd')) return [];
    const out: EdgeAdmission['prices'] = [];
    for (const model of deps.catalog.current().all()) {
      const pricing = deps.priceOf(model.id);
      if (pricing !== null) out.push([model.id, pricing]);
    }
    return out;
  };
  const gaugeNow = (): boolean => {
    const next: EdgeAdmission['gauge'] = [];
    for (const { record } of state.limits) {
      if (record.window !== 'gauge') continue;
      const { accountId, windowId } = record.gauge!;
      next.push([shareKey(accountId, windowId), deps.gaugeShare(accountId, windowId)]);
    }
    const text = JSON.stringify(next);
    if (text === gaugeText) return false;
    gauge = next;
    gaugeText = text;
    return true;
  };
  const unfollow = deps.followAdmission((next) => {
    state = next;
    prices = pricesNow();
    gaugeNow();
    return tell();
  });
  // Prices follow the catalog.
  const unfollowCatalog = deps.catalog.follow(() => {
    if (!state.limits.some((l) => l.record.metric === 'usd')) return;
    prices = pricesNow();
    return tell();
  });
  const timer = setInterval(() => {
    if (state.limits.some((l) => l.record.window === 'gauge') && gaugeNow()) void tell();
  }, deps.gaugeEveryMs ?? 1000);
  timer.unref();
  return () => {
    clearInterval(timer);
    unfollow();
    unfollowCatalog();
  };
}
