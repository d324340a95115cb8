import { ServiceError } from '../protocol/errors.ts';
import { LIMIT_BOUNDS, type LimitCreate, type LimitRecord, type LimitScopeKind } from '../protocol/http/limits.ts';

// What a limit's create and update check beyond the schema: the bound against its metric, the scope against what
// exists, and a Gauge gate's parts against each other and the Gauge accounts.

const bad = (param: string, message: string) => new ServiceError('INVALID_REQUEST', message, { param });

export function checkMax(metric: LimitRecord['metric'], max: number): void {
  if (metric === 'gauge_percent') {
    if (max > 100) throw bad('max', 'A `gauge_percent` limit is a share of the window: at most 100.');
  } else if (metric === 'usd') {
    if (max > LIMIT_BOUNDS.usdMax) throw bad('max', `A dollar limit is at most ${LIMIT_BOUNDS.usdMax}.`);
  } else if (!Number.isInteger(max)) throw bad('max', `A ${metric} limit is a whole number.`);
}

export async function checkScope(
  input: LimitCreate,
  scopeExists: (kind: LimitScopeKind, id: string) => Promise<boolean>,
): Promise<LimitRecord['scope']> {
  const { kind } = input.scope;
  const id = input.scope.id ?? null;
  if (kind === 'service') {
    if (id !== null) throw bad('scope.id', 'A `service` limit counts every call: it takes no `id`.');
    return { kind, id };
  }
  if (kind === 'session') return { kind, id };
  if (id === null) throw bad('scope.id', `A \`${kind}\` limit names its ${kind.replace('_', ' ')} in \`id\`.`);
  if (!(await scopeExists(kind, id))) throw bad('scope.id', `No ${kind.replace('_', ' ')} \`${id}\`.`);
  return { kind, id };
}

/** `gauge` window, `gauge_percent` metric and a `gauge` account come together or not at all. */
export function checkGauge(
  input: LimitCreate,
  gaugeAccountExists: (accountId: string) => boolean,
): LimitRecord['gauge'] {
  const gaugeWindow = input.window === 'gauge';
  if (gaugeWindow !== (input.metric === 'gauge_percent') || gaugeWindow !== (input.gauge !== undefined)) {
    throw bad('gauge', 'A Gauge window limit has `window` `gauge`, `metric` `gauge_percent` and a `gauge` object.');
  }
  if (input.gauge === undefined) return null;
  if (!gaugeAccountExists(input.gauge.accountId))
    throw bad('gauge.accountId', `No Gauge account \`${input.gauge.accountId}\`; see GET /v1/gauge/accounts.`);
  return {
    accountId: input.gauge.accountId,
    windowId: input.gauge.windowId,
    stops: input.gauge.stops ?? 'new_sessions',
  };
}
