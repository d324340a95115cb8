// A small Prometheus registry and its text exposition (format 0.0.4): counters, gauges and histograms, each
// with a fixed list of label names and a hard cap on its series. Callers keep the child a label set returns
// and increment it; the hot path then costs a field update, and labels are joined only the first time.

export { CONTENT_TYPE } from '../../protocol/metrics.ts';
/** Series per metric before new label sets fold into one `other` series. */
export const MAX_SERIES = 1000;
/** The label value every label of a folded series takes. */
export const OTHER = 'other';
// Label values come from bounded sets or user-chosen IDs (at most 63 characters); this cuts anything longer.
const MAX_LABEL_CHARS = 128;

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

export type MetricType = 'counter' | 'gauge' | 'histogram';

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
}

export interface Registry {
  counter(name: string, help: string, labelNames?: readonly string[]): Metric<CounterChild>;
  gauge(name: string, help: string, labelNames?: readonly string[]): Metric<GaugeChild>;
  histogram(
    name: string,
    help: string,
    labelNames: readonly string[],
    bounds: readonly number[],
  ): Metric<HistogramChild>;
  /** Runs before each render: sets the values read from current state (pools, process, stores). */
  onCollect(collect: () => void): void;
  render(): string;
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
    gauge: (name, help, labelNames = []) =>
      add(new Metric(name, help, 'gauge', labelNames, () => new GaugeChild(), maxSeries)),
    histogram(name, help, labelNames, bounds) {
      if (bounds.length === 0 || bounds.some((b, i) => !Number.isFinite(b) || (i > 0 && b <= bounds[i - 1]!)))
        throw new Error(`${name}: bounds must be finite and increasing`);
      const frozen = Object.freeze([...bounds]);
      return add(new Metric(name, help, 'histogram', labelNames, () => new HistogramChild(frozen), maxSeries));
    },
    onCollect: (collect) => void collectors.push(collect),
    render() {
      for (const collect of collectors) collect();
      return metrics.map(renderMetric).join('');
    },
  };
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

function renderMetric(m: Metric<Child>): string {
  let out = `# HELP ${m.name} ${escapeHelp(m.help)}\n# TYPE ${m.name} ${m.type}\n`;
  for (const { values, child } of m.entries()) {
    if (child instanceof HistogramChild) {
      const { bounds } = child;
      let cumulative = 0;
      for (let i = 0; i <= bounds.length; i++) {
        cumulative += child.counts[i]!;
        const le = i < bounds.length ? formatValue(bounds[i]!) : '+Inf';
        out += `${m.name}_bucket${labelText(m.labelNames, values, `le="${le}"`)} ${formatValue(cumulative)}\n`;
      }
      const labels = labelText(m.labelNames, values);
      out += `${m.name}_sum${labels} ${formatValue(child.sum)}\n${m.name}_count${labels} ${formatValue(child.count)}\n`;
    } else out += `${m.name}${labelText(m.labelNames, values)} ${formatValue(child.value)}\n`;
  }
  return out;
}
