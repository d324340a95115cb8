import { FAMILY_OPERATIONS } from '../protocol/families.ts';
import type { UsageEvent } from '../protocol/gateway.ts';
import type { RequestObserver } from '../protocol/metrics.ts';
import { MAX_SERIES, OTHER, type CounterChild, type HistogramChild, type Registry } from './registry.ts';

// What every answer and every metered call adds to /metrics. Labels come from bounded sets only: the route
// family (from the route table, never the raw path), a method from a fixed list, a status class, an error
// code of protocol/errors.ts, and a provider record's ID (the person's own, at most 63 characters). Model IDs
// are left out: one provider can list thousands, and /v1/usage already answers per model.

/** Request durations of a local gateway: a cached management read takes well under a millisecond, a long
 * generation a minute. Seconds, as Prometheus names them. */
export const DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

const METHODS = ['GET', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS', 'HEAD'];
const CLASSES = ['1xx', '2xx', '3xx', '4xx', '5xx'];
const TOKEN_KINDS = ['input', 'output', 'cached_input', 'reasoning', 'cache_write', 'cache_write_1h'] as const;

/** Per route name: the family it belongs to and the series it adds to, made on its first answer. */
interface RouteEntry {
  family: string;
  /** By method index * CLASSES.length + status class. */
  requests: (CounterChild | undefined)[];
  duration: HistogramChild;
  errors: Map<string, CounterChild>;
}

interface ProviderEntry {
  /** The provider's ID, or `other` once MAX_SERIES providers have series. */
  label: string;
  calls: Map<string, CounterChild>;
  tokens: CounterChild[];
}

export type { RequestObserver };

// Gateway operations by route name, as the route table spells them (`:id`, not `{id}`).
const GATEWAY_FAMILIES = new Map<string, string>();
for (const [family, ops] of Object.entries(FAMILY_OPERATIONS)) {
  for (const op of ops) GATEWAY_FAMILIES.set(`${op.method} ${op.path.replace(/\{(\w+)\}/g, ':$1')}`, family);
}

/**
 * The family of a route name: an endpoint family for a gateway operation, else the first path segment under
 * /v1 (`providers`, `gauge`, ...), `process` for the routes outside /v1 (/health, /metrics), and the app's
 * own names (`unmatched`, `preflight`) as they are.
 */
export function familyOf(route: string): string {
  const gateway = GATEWAY_FAMILIES.get(route);
  if (gateway !== undefined) return gateway;
  const space = route.indexOf(' ');
  if (space < 0) return route;
  const path = route.slice(space + 1);
  if (!path.startsWith('/v1/')) return 'process';
  const end = path.indexOf('/', 4);
  return path.slice(4, end < 0 ? undefined : end) || 'process';
}

export function statusClass(status: number): number {
  const c = Math.floor(status / 100) - 1;
  return c >= 0 && c < CLASSES.length ? c : CLASSES.length - 1;
}

// The traffic metrics: each counted as it happens, from the app's answers and the gateway's usage events.
export function createTrafficMetrics(registry: Registry) {
  const requests = registry.counter(
    'switchyard_http_requests_total',
    'HTTP answers by route family, method and status class.',
    ['family', 'method', 'status_class'],
  );
  const errors = registry.counter(
    'switchyard_http_errors_total',
    'Error answers by route family and error code (docs/api.md, Errors).',
    ['family', 'code'],
  );
  const duration = registry.histogram(
    'switchyard_http_request_duration_seconds',
    'Time from a request head to its last answer byte, by route family.',
    ['family'],
    DURATION_BUCKETS,
  );
  const calls = registry.counter(
    'switchyard_gateway_calls_total',
    'Metered gateway calls by provider and outcome (ok, failed, aborted).',
    ['provider', 'outcome'],
  );
  const tokens = registry.counter(
    'switchyard_tokens_total',
    'Tokens the upstream reported, by provider and kind; cached_input is part of input.',
    ['provider', 'kind'],
  );

  // Route names come from the route table plus two names of the app's own: a bounded set, so the cache is.
  const routes = new Map<string, RouteEntry>();
  const providers = new Map<string, ProviderEntry>();

  function routeEntry(route: string): RouteEntry {
    let entry = routes.get(route);
    if (entry === undefined) {
      const family = familyOf(route);
      entry = { family, requests: [], duration: duration.labels(family), errors: new Map() };
      routes.set(route, entry);
    }
    return entry;
  }

  function providerEntry(id: string): ProviderEntry {
    let entry = providers.get(id);
    if (entry === undefined) {
      const label = providers.size >= MAX_SERIES ? OTHER : id;
      entry = providers.get(label);
      if (entry === undefined) {
        entry = { label, calls: new Map(), tokens: TOKEN_KINDS.map((k) => tokens.labels(label, k)) };
        providers.set(label, entry);
      }
    }
    return entry;
  }

  const observer: RequestObserver = {
    answered(route, method, status, durationMs) {
      const entry = routeEntry(route);
      let m = METHODS.indexOf(method);
      if (m < 0) m = METHODS.length;
      const slot = m * CLASSES.length + statusClass(status);
      const counter = (entry.requests[slot] ??= requests.labels(
        entry.family,
        m < METHODS.length ? method : 'other',
        CLASSES[statusClass(status)]!,
      ));
      counter.inc();
      entry.duration.observe(durationMs / 1000);
    },
    failed(route, code) {
      const entry = routeEntry(route);
      let counter = entry.errors.get(code);
      if (counter === undefined) entry.errors.set(code, (counter = errors.labels(entry.family, code)));
      counter.inc();
    },
  };

  /** A gateway call's usage event: its outcome and the tokens its upstream reported. */
  function usage(event: UsageEvent): void {
    const entry = providerEntry(event.providerId);
    let counter = entry.calls.get(event.outcome);
    if (counter === undefined) entry.calls.set(event.outcome, (counter = calls.labels(entry.label, event.outcome)));
    counter.inc();
    const u = event.usage;
    if (u === null) return;
    add(entry.tokens[0]!, u.inputTokens);
    add(entry.tokens[1]!, u.outputTokens);
    add(entry.tokens[2]!, u.cachedInputTokens);
    add(entry.tokens[3]!, u.reasoningTokens);
    add(entry.tokens[4]!, u.cacheWriteTokens ?? null);
    add(entry.tokens[5]!, u.cacheWrite1hTokens ?? null);
  }

  return { observer, usage };
}

function add(counter: CounterChild, n: number | null): void {
  if (typeof n === 'number' && Number.isFinite(n) && n > 0) counter.inc(n);
}
