// A small Prometheus registry and its text exposition (format 0.0.4): counters, gauges and histograms, each
// with a fixed list of label names and a hard cap on its series. Callers keep the child a label set returns
// and increment it; the hot path then costs a field update, and labels are joined only the first time.

export { CONTENT_TYPE } from '../protocol/metrics.ts';
/** Series per metric before new label sets fold into one `other` series. */
export const MAX_SERIES = 1000;
/** The label value every label of a folded series takes. */
export const OTHER = 'other';
// Label values come from bounded sets or user-chosen IDs (at most 63 characters); this cuts anything longer.
const MAX_LABEL_CHARS = 128;

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export type MetricType = 'counter' | 'gauge' | 'histogram';
/** How one series of several threads' registries becomes one: added, or the largest (a gauge of a worst case). */
export type MergeRule = 'sum' | 'max';

/** A series as plain data: a counter's or gauge's value, or a histogram's per-bucket counts, sum and count. */
export interface SeriesSnapshot {
  values: readonly string[];
  value?: number;
  counts?: number[];
  sum?: number;
  count?: number;
}

/** A metric as plain data, to cross to the thread that renders /metrics. */
export interface MetricSnapshot {
  name: string;
  help: string;
  type: MetricType;
  labelNames: readonly string[];
  merge: MergeRule;
  bounds?: readonly number[];
  series: SeriesSnapshot[];
}

export class CounterChild {
  value = 0;
  inc(n = 1): void {
    if (n >= 0) this.value += n;
  }
}

export class GaugeChild {
  value = 0;
  set(v: number): void {
    this.value = v;
  }
  inc(n = 1): void {
    this.value += n;
  }
}

export class HistogramChild {
  /** Per bucket, not cumulative: the writer sums them. The last slot is the +Inf bucket. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;
  constructor(readonly bounds: readonly number[]) {
    this.counts = new Float64Array(bounds.length + 1);
  }
  observe(v: number): void {
    if (Number.isNaN(v)) return;
    const b = this.bounds;
    let i = 0;
    while (i < b.length && v > b[i]!) i++;
    this.counts[i]!++;
    this.sum += v;
    this.count++;
  }
}

type Child = CounterChild | GaugeChild | HistogramChild;

export class Metric<C extends Child> {
  private readonly series = new Map<string, { values: string[]; child: C }>();
  private folded: C | null = null;

  constructor(
    readonly name: string,
    readonly help: string,
    readonly type: MetricType,
    readonly labelNames: readonly string[],
    private readonly make: () => C,
    private readonly maxSeries: number,
    readonly merge: MergeRule = 'sum',
  ) {
    if (!METRIC_NAME.test(name)) throw new Error(`bad metric name ${name}`);
    for (const l of labelNames) {
      if (!LABEL_NAME.test(l) || l.startsWith('__') || (type === 'histogram' && l === 'le'))
        throw new Error(`bad label name ${l} on ${name}`);
    }
    if (labelNames.length === 0) this.labels();
  }

  /** The series of these label values (in `labelNames` order); past the cap, the one `other` series. */
  labels(...values: string[]): C {
    if (values.length !== this.labelNames.length)
      throw new Error(`${this.name} takes ${this.labelNames.length} labels`);
    const key = values.join('\u0000');
    const found = this.series.get(key);
    if (found) return found.child;
    if (this.series.size >= this.maxSeries) return (this.folded ??= this.make());
    const child = this.make();
    this.series.set(key, {
      values: values.map((v) => (v.length > MAX_LABEL_CHARS ? v.slice(0, MAX_LABEL_CHARS) : v)),
      child,
    });
    return child;
  }

  /** Forgets every series: for metrics rebuilt from current state at each scrape. */
  reset(): void {
    this.series.clear();
    this.folded = null;
  }

  size(): number {
    return this.series.size + (this.folded === null ? 0 : 1);
  }

  *entries(): Generator<{ values: readonly string[]; child: C }> {
    yield* this.series.values();
    if (this.folded !== null) yield { values: this.labelNames.map(() => OTHER), child: this.folded };
  }

  snapshot(): MetricSnapshot {
    const series: SeriesSnapshot[] = [];
    let bounds: readonly number[] | undefined;
    for (const { values, child } of this.entries()) {
      if (child instanceof HistogramChild) {
        bounds = child.bounds;
        series.push({ values, counts: [...child.counts], sum: child.sum, count: child.count });
      } else series.push({ values, value: child.value });
    }
    const { name, help, type, labelNames, merge } = this;
    return { name, help, type, labelNames, merge, ...(bounds && { bounds }), series };
  }
}

export interface Registry {
  counter(name: string, help: string, labelNames?: readonly string[]): Metric<CounterChild>;
  /** `merge`: how other threads' series of this gauge add to this one's (sum unless said). */
  gauge(name: string, help: string, labelNames?: readonly string[], merge?: MergeRule): Metric<GaugeChild>;
  histogram(
    name: string,
    help: string,
    labelNames: readonly string[],
    bounds: readonly number[],
  ): Metric<HistogramChild>;
  /** Runs before each render or snapshot: sets the values read from current state (pools, process, stores). */
  onCollect(collect: () => void): void;
  /** Every metric as plain data, for another thread's render. */
  snapshot(): MetricSnapshot[];
  /** The text exposition; with `others` (other threads' snapshots), each series merged across the threads. */
  render(others?: readonly MetricSnapshot[][]): string;
}

export function createRegistry(options: { maxSeries?: number } = {}): Registry {
  const maxSeries = options.maxSeries ?? MAX_SERIES;
  const metrics: Metric<Child>[] = [];
  const collectors: (() => void)[] = [];
  const add = <C extends Child>(m: Metric<C>): Metric<C> => {
    if (metrics.some((other) => other.name === m.name)) throw new Error(`duplicate metric ${m.name}`);
    metrics.push(m as unknown as Metric<Child>);
    return m;
  };
  return {
    counter: (name, help, labelNames = []) =>
      add(new Metric(name, help, 'counter', labelNames, () => new CounterChild(), maxSeries)),
    gauge: (name, help, labelNames = [], merge = 'sum') =>
      add(new Metric(name, help, 'gauge', labelNames, () => new GaugeChild(), maxSeries, merge)),
    histogram(name, help, labelNames, bounds) {
      if (bounds.length === 0 || bounds.some((b, i) => !Number.isFinite(b) || (i > 0 && b <= bounds[i - 1]!)))
        throw new Error(`${name}: bounds must be finite and increasing`);
      const frozen = Object.freeze([...bounds]);
      return add(new Metric(name, help, 'histogram', labelNames, () => new HistogramChild(frozen), maxSeries));
    },
    onCollect: (collect) => void collectors.push(collect),
    snapshot() {
      for (const collect of collectors) collect();
      return metrics.map((m) => m.snapshot());
    },
    render(others = []) {
      for (const collect of collectors) collect();
      const own = metrics.map((m) => m.snapshot());
      return (others.length === 0 ? own : mergeSnapshots([own, ...others])).map(renderSnapshot).join('');
    },
  };
}

/**
 * One list of metrics from several threads': a metric by its name, a series by its label values. Counters and
 * histograms add up (a histogram of other bounds than the first thread's is left out: its buckets cannot
 * add); a gauge adds up or takes the largest, as it was registered. Metrics keep the order they are first seen.
 */
export function mergeSnapshots(threads: readonly (readonly MetricSnapshot[])[]): MetricSnapshot[] {
  const byName = new Map<string, { metric: MetricSnapshot; series: Map<string, SeriesSnapshot> }>();
  for (const thread of threads) {
    for (const m of thread) {
      let into = byName.get(m.name);
      if (into === undefined) {
        into = { metric: { ...m, series: [] }, series: new Map() };
        byName.set(m.name, into);
      } else if (into.metric.type !== m.type) continue;
      // A histogram's bounds are known from its first series: a thread without one takes the next thread's.
      else if (into.metric.bounds === undefined) into.metric.bounds = m.bounds;
      else if (m.bounds !== undefined && !sameBounds(into.metric.bounds, m.bounds)) continue;
      for (const s of m.series) {
        const key = s.values.join('\u0000');
        const seen = into.series.get(key);
        if (seen === undefined) into.series.set(key, { ...s, ...(s.counts && { counts: [...s.counts] }) });
        else addSeries(seen, s, into.metric.merge);
      }
    }
  }
  return [...byName.values()].map(({ metric, series }) => ({ ...metric, series: [...series.values()] }));
}

const sameBounds = (a?: readonly number[], b?: readonly number[]) =>
  a === b || (a !== undefined && b !== undefined && a.length === b.length && a.every((x, i) => x === b[i]));

function addSeries(into: SeriesSnapshot, s: SeriesSnapshot, merge: MergeRule): void {
  if (into.counts !== undefined && s.counts !== undefined) {
    s.counts.forEach((n, i) => (into.counts![i]! += n));
    into.sum! += s.sum!;
    into.count! += s.count!;
  } else into.value = merge === 'max' ? Math.max(into.value!, s.value!) : into.value! + s.value!;
}

export function escapeHelp(text: string): string {
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n');
}

export function escapeLabelValue(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

export function formatValue(v: number): string {
  if (v === Infinity) return '+Inf';
  if (v === -Infinity) return '-Inf';
  if (Number.isNaN(v)) return 'NaN';
  return String(v);
}

function labelText(names: readonly string[], values: readonly string[], extra?: string): string {
  const parts = names.map((n, i) => `${n}="${escapeLabelValue(values[i]!)}"`);
  if (extra !== undefined) parts.push(extra);
  return parts.length === 0 ? '' : `{${parts.join(',')}}`;
}

function renderSnapshot(m: MetricSnapshot): string {
  let out = `# HELP ${m.name} ${escapeHelp(m.help)}\n# TYPE ${m.name} ${m.type}\n`;
  for (const s of m.series) {
    if (s.counts !== undefined) {
      const bounds = m.bounds!;
      let cumulative = 0;
      for (let i = 0; i <= bounds.length; i++) {
        cumulative += s.counts[i]!;
        const le = i < bounds.length ? formatValue(bounds[i]!) : '+Inf';
        out += `${m.name}_bucket${labelText(m.labelNames, s.values, `le="${le}"`)} ${formatValue(cumulative)}\n`;
      }
      const labels = labelText(m.labelNames, s.values);
      out += `${m.name}_sum${labels} ${formatValue(s.sum!)}\n${m.name}_count${labels} ${formatValue(s.count!)}\n`;
    } else out += `${m.name}${labelText(m.labelNames, s.values)} ${formatValue(s.value!)}\n`;
  }
  return out;
}
