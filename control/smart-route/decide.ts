import type { EndpointFamily } from '../../protocol/families.ts';
import { GENERATION_FAMILIES } from '../../protocol/families.ts';
import type { PackRoute, RoutePackView, Strategy } from '../../protocol/http/route-packs.ts';
import { KINDS } from '../../protocol/providers.ts';
import type { CapacitySignal } from '../capacity.ts';
import type { Catalog, ResolvedModel } from '../../protocol/catalog-entries.ts';
import { usableCredentials } from '../../protocol/catalog.ts';
import type { LatencyTracker } from './latency.ts';
import type { Attempt, Candidate, Decision } from '../../protocol/smart-route.ts';
import { familyWords } from '../../protocol/words.ts';

export type { Attempt, Candidate, Decision };

// Which route a pack takes now and why: the eligible routes ranked by the pack's strategy, the ineligible
// ones with the reason, then the fallback. The gateway attempts `attempts` in order; GET .../decision shows
// the same object, so what the operator reads is what a request would do.

/** The route ID usage rows carry for the fallback model; `@` keeps it apart from every route slug. */
export const FALLBACK_ROUTE_ID = '@fallback';

export interface Signals {
  capacity: CapacitySignal;
  latency: LatencyTracker;
  now?: number;
}

/** The generation families the fallback model guarantees; what the synthetic model advertises. */
export function packFamilies(pack: RoutePackView, catalog: Catalog): EndpointFamily[] | null {
  const fallback = catalog.resolve(pack.fallback.model);
  if (!fallback || pack.routes.some((r) => catalog.resolve(r.model) === null)) return null;
  const families = fallback.model.families.filter((f) => GENERATION_FAMILIES.includes(f));
  return families.length === 0 ? null : families;
}

interface Scored {
  route: PackRoute;
  index: number;
  target: ResolvedModel;
  /** Lower is better; null sorts after every number. */
  score: number | null;
  reason: string;
}

function score(strategy: Strategy, target: ResolvedModel, index: number, s: Signals): Pick<Scored, 'score' | 'reason'> {
  const id = target.model.id;
  switch (strategy) {
    case 'ordered':
      return { score: index, reason: `position ${index + 1} in the pack` };
    case 'cost': {
      const p = target.model.pricing;
      if (p === null) return { score: null, reason: 'unpriced: ranked after priced routes' };
      return {
        score: p.inputPerMTok + p.outputPerMTok,
        reason: `price ${p.inputPerMTok} in + ${p.outputPerMTok} out ${p.currency} per MTok`,
      };
    }
    case 'latency': {
      const ms = s.latency.read(id);
      if (ms === null) return { score: null, reason: 'no recent time to first byte: ranked after measured routes' };
      return { score: ms, reason: `recent time to first byte ${Math.round(ms)} ms` };
    }
    case 'capacity': {
      const r = s.capacity.read(id, s.now);
      // No signal is no evidence of pressure: such a route counts as fully available.
      if (r === null) return { score: -1, reason: 'no rate-limit signal: assumed full headroom' };
      if (r.source === 'gauge') {
        const left = r.limit === null ? '' : ` (${r.remaining ?? 0}/${r.limit} left)`;
        return {
          score: -r.headroom,
          reason:
            `Gauge reading: ${r.headroom === 0 ? 'exhausted' : `headroom ${r.headroom.toFixed(2)}`}${left} ` +
            `until ${new Date(r.resetAt).toISOString()}`,
        };
      }
      const counts =
        r.limit === null ? `${r.remaining ?? 0} requests left` : `${r.remaining ?? 0}/${r.limit} requests left`;
      const until = `until ${new Date(r.resetAt).toISOString()}`;
      const what =
        r.headroom === 0
          ? r.source === 'rate_limited'
            ? 'rate limited'
            : 'exhausted'
          : `headroom ${r.headroom.toFixed(2)}`;
      return { score: -r.headroom, reason: `${what} (${counts}) ${until}` };
    }
  }
}

function ineligibility(route: PackRoute, family: EndpointFamily, catalog: Catalog): string | null {
  const target = catalog.resolve(route.model);
  if (!target) return 'unavailable: hidden, disabled or not in the catalog';
  if (!target.model.families.includes(family)) return `does not support ${familyWords(family)}`;
  if (KINDS[target.provider.kind].credential === 'required' && usableCredentials(target.provider).length === 0)
    return target.provider.credentials.length === 0
      ? 'provider has no credential'
      : 'provider has no usable credential';
  return null;
}

function candidateOf(
  route: PackRoute,
  catalog: Catalog,
  eligible: boolean,
  attempt: number | null,
  reason: string,
): Candidate {
  const target = catalog.resolve(route.model);
  return {
    routeId: route.id,
    model: route.model,
    modelId: target?.model.id ?? null,
    providerId: target?.provider.id ?? null,
    weight: route.weight,
    eligible,
    attempt,
    reason,
  };
}

export function decide(pack: RoutePackView, family: EndpointFamily, catalog: Catalog, signals: Signals): Decision {
  const scored: Scored[] = [];
  const skipped: Candidate[] = [];
  pack.routes.forEach((route, index) => {
    const why = ineligibility(route, family, catalog);
    if (why !== null) skipped.push(candidateOf(route, catalog, false, null, why));
    else {
      const target = catalog.resolve(route.model)!;
      scored.push({ route, index, target, ...score(pack.strategy, target, index, signals) });
    }
  });
  // Ties go to the heavier route, then to pack order.
  scored.sort((a, b) => {
    if (a.score !== b.score) {
      if (a.score === null) return 1;
      if (b.score === null) return -1;
      return a.score - b.score;
    }
    return b.route.weight - a.route.weight || a.index - b.index;
  });
  const ranked = scored.map((s, i) => {
    const within = i < pack.maxAttempts;
    const reason = within ? s.reason : `${s.reason}; beyond maxAttempts ${pack.maxAttempts}`;
    return candidateOf(s.route, catalog, true, within ? i + 1 : null, reason);
  });
  const attempts: Attempt[] = scored.slice(0, pack.maxAttempts).map((s) => ({ routeId: s.route.id, target: s.target }));

  const fbRoute: PackRoute = { id: FALLBACK_ROUTE_ID, model: pack.fallback.model, weight: 1 };
  const fbWhy = ineligibility(fbRoute, family, catalog);
  const fallback = candidateOf(
    fbRoute,
    catalog,
    fbWhy === null,
    fbWhy === null ? attempts.length + 1 : null,
    fbWhy ?? `after ${attempts.length} route attempt(s) fail with ${pack.retryOn.join(', ') || 'no retryable class'}`,
  );
  if (fbWhy === null) attempts.push({ routeId: FALLBACK_ROUTE_ID, target: catalog.resolve(pack.fallback.model)! });

  return {
    slug: pack.slug,
    strategy: pack.strategy,
    family,
    maxAttempts: pack.maxAttempts,
    retryOn: [...pack.retryOn],
    candidates: [...ranked, ...skipped],
    fallback,
    attempts,
  };
}
