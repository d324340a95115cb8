// A strict reader of the Prometheus text format 0.0.4, for tests: every line must be a HELP, a TYPE, another
// comment or a valid sample, or it throws. Histograms are checked as a scraper relies on them: buckets in
// increasing `le`, cumulative counts that never fall, a `+Inf` bucket equal to `_count`.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  type: string;
  help: string | null;
  samples: Sample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

export function parseFloatStrict(text: string): number {
  if (text === '+Inf' || text === 'Inf') return Infinity;
  if (text === '-Inf') return -Infinity;
  if (text === 'NaN') return NaN;
  if (!/^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$/.test(text)) throw new Error(`not a number: ${text}`);
  return Number(text);
}

function parseLabels(text: string, line: string): { labels: Record<string, string>; rest: string } {
  const labels: Record<string, string> = {};
  let i = 1;
  for (;;) {
    if (text[i] === '}') return { labels, rest: text.slice(i + 1) };
    const eq = text.indexOf('=', i);
    if (eq < 0) throw new Error(`bad labels: ${line}`);
    const name = text.slice(i, eq);
    if (!LABEL_NAME.test(name)) throw new Error(`bad label name ${name}: ${line}`);
    if (name in labels) throw new Error(`label ${name} twice: ${line}`);
    if (text[eq + 1] !== '"') throw new Error(`unquoted label value: ${line}`);
    let value = '';
    let j = eq + 2;
    for (; ; j++) {
      const c = text[j];
      if (c === undefined) throw new Error(`unterminated label value: ${line}`);
      if (c === '"') break;
      if (c === '\\') {
        const next = text[++j];
        if (next === '\\') value += '\\';
        else if (next === '"') value += '"';
        else if (next === 'n') value += '\n';
        else throw new Error(`bad escape \\${next}: ${line}`);
      } else value += c;
    }
    labels[name] = value;
    i = j + 1;
    if (text[i] === ',') i++;
    else if (text[i] !== '}') throw new Error(`expected , or }: ${line}`);
  }
}

/** The base name a sample belongs to, given the declared types. */
function familyOf(name: string, families: Map<string, Family>): string {
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (name.endsWith(suffix)) {
      const base = name.slice(0, -suffix.length);
      if (families.get(base)?.type === 'histogram') return base;
    }
  }
  return name;
}

export function parseExposition(text: string): Map<string, Family> {
  if (!text.endsWith('\n')) throw new Error('the last line must end with a line feed');
  const families = new Map<string, Family>();
  const declare = (name: string): Family => {
    let f = families.get(name);
    if (!f) families.set(name, (f = { type: 'untyped', help: null, samples: [] }));
    return f;
  };
  const typed = new Set<string>();
  for (const line of text.slice(0, -1).split('\n')) {
    if (line.trim() === '') continue;
    if (line.startsWith('#')) {
      const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
      if (!m) continue;
      const [, kind, name, rest] = m as unknown as [string, string, string, string];
      if (!METRIC_NAME.test(name)) throw new Error(`bad metric name: ${line}`);
      const f = declare(name);
      if (kind === 'HELP') {
        if (f.help !== null) throw new Error(`second HELP: ${line}`);
        if (/\\[^\\n]/.test(rest.replace(/\\\\/g, ''))) throw new Error(`bad HELP escape: ${line}`);
        f.help = rest.replace(/\\(\\|n)/g, (_, c: string) => (c === 'n' ? '\n' : '\\'));
      } else {
        if (typed.has(name) || f.samples.length > 0) throw new Error(`TYPE after samples or twice: ${line}`);
        if (!TYPES.has(rest)) throw new Error(`bad type: ${line}`);
        typed.add(name);
        f.type = rest;
      }
      continue;
    }
    const nameEnd = line.search(/[{ ]/);
    if (nameEnd <= 0) throw new Error(`bad sample: ${line}`);
    const name = line.slice(0, nameEnd);
    if (!METRIC_NAME.test(name)) throw new Error(`bad metric name: ${line}`);
    let rest = line.slice(nameEnd);
    let labels: Record<string, string> = {};
    if (rest.startsWith('{')) ({ labels, rest } = parseLabels(rest, line));
    const parts = rest.trim().split(/\s+/);
    if (!rest.startsWith(' ') || parts.length < 1 || parts.length > 2) throw new Error(`bad sample value: ${line}`);
    const value = parseFloatStrict(parts[0]!);
    if (parts.length === 2 && !/^-?\d+$/.test(parts[1]!)) throw new Error(`bad timestamp: ${line}`);
    declare(familyOf(name, families)).samples.push({ name, labels, value });
  }
  for (const [name, f] of families) if (f.type === 'histogram') checkHistogram(name, f);
  return families;
}

function checkHistogram(name: string, f: Family): void {
  const key = (labels: Record<string, string>) =>
    JSON.stringify(
      Object.entries(labels)
        .filter(([k]) => k !== 'le')
        .sort(([a], [b]) => a.localeCompare(b)),
    );
  const groups = new Map<string, { buckets: { le: number; value: number }[]; count?: number }>();
  for (const s of f.samples) {
    const g = groups.get(key(s.labels)) ?? { buckets: [] };
    groups.set(key(s.labels), g);
    if (s.name === `${name}_bucket`) {
      if (s.labels.le === undefined) throw new Error(`${name}: bucket without le`);
      g.buckets.push({ le: parseFloatStrict(s.labels.le), value: s.value });
    } else if (s.name === `${name}_count`) g.count = s.value;
    else if (s.name !== `${name}_sum`) throw new Error(`${name}: stray sample ${s.name}`);
  }
  for (const [labels, g] of groups) {
    const last = g.buckets.at(-1);
    if (!last || last.le !== Infinity) throw new Error(`${name}${labels}: no +Inf bucket`);
    g.buckets.forEach((b, i) => {
      if (i > 0 && (b.le <= g.buckets[i - 1]!.le || b.value < g.buckets[i - 1]!.value))
        throw new Error(`${name}${labels}: buckets out of order`);
    });
    if (g.count !== last.value) throw new Error(`${name}${labels}: +Inf bucket ${last.value} != count ${g.count}`);
  }
}

/** The value of the one sample of `name` whose labels include `labels`; 0 when there is none. */
export function sampleValue(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number {
  const base = families.get(name) ? name : name.replace(/_(bucket|sum|count)$/, '');
  const matches = (families.get(base)?.samples ?? []).filter(
    (s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v),
  );
  if (matches.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches ${matches.length} samples`);
  return matches[0]?.value ?? 0;
}

/** The sum over the samples of `name` whose labels include `labels`. */
export function sumOf(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number {
  const base = families.get(name) ? name : name.replace(/_(bucket|sum|count)$/, '');
  return (families.get(base)?.samples ?? [])
    .filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v))
    .reduce((a, s) => a + s.value, 0);
}
