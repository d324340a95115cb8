import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createRegistry, escapeLabelValue, formatValue, OTHER } from '../../metrics/registry.ts';
import { parseExposition, sampleValue } from '../helpers/prometheus.ts';

test('label values escape backslash, double quote and line feed, and read back as they were', () => {
  const registry = createRegistry();
  const c = registry.counter('t_total', 'A help line with a \\ backslash\nand a second line.', ['provider']);
  const hostile = 'a\\b"c\nd}e,f="g';
  c.labels(hostile).inc(3);
  const text = registry.render();
  assert.ok(text.includes('t_total{provider="a\\\\b\\"c\\nd}e,f=\\"g"} 3\n'), text);
  assert.ok(text.includes('# HELP t_total A help line with a \\\\ backslash\\nand a second line.\n'), text);
  const families = parseExposition(text);
  assert.equal(families.get('t_total')!.help, 'A help line with a \\ backslash\nand a second line.');
  assert.equal(sampleValue(families, 't_total', { provider: hostile }), 3);
  assert.equal(escapeLabelValue('plain'), 'plain');
});

test('histogram buckets are cumulative, end at +Inf and agree with _count and _sum', () => {
  const registry = createRegistry();
  const h = registry.histogram('t_seconds', 'Durations.', ['family'], [0.01, 0.1, 1]);
  const child = h.labels('x');
  // On a bound counts in that bucket (le is "less than or equal").
  for (const v of [0.005, 0.01, 0.05, 0.5, 0.5, 7]) child.observe(v);
  const families = parseExposition(registry.render());
  const bucket = (le: string) => sampleValue(families, 't_seconds_bucket', { family: 'x', le });
  assert.deepEqual([bucket('0.01'), bucket('0.1'), bucket('1'), bucket('+Inf')], [2, 3, 5, 6]);
  assert.equal(sampleValue(families, 't_seconds_count', { family: 'x' }), 6);
  assert.ok(Math.abs(sampleValue(families, 't_seconds_sum', { family: 'x' }) - 8.065) < 1e-9);
});

test('past the series cap, new label sets add to one `other` series and the total is kept', () => {
  const registry = createRegistry({ maxSeries: 3 });
  const c = registry.counter('t_total', 'Capped.', ['provider', 'kind']);
  for (let i = 0; i < 10; i++) c.labels(`p${i}`, 'input').inc(i + 1);
  c.labels('p0', 'input').inc(100);
  const families = parseExposition(registry.render());
  const samples = families.get('t_total')!.samples;
  assert.equal(samples.length, 4);
  assert.equal(sampleValue(families, 't_total', { provider: 'p0' }), 101);
  assert.equal(sampleValue(families, 't_total', { provider: OTHER, kind: OTHER }), 4 + 5 + 6 + 7 + 8 + 9 + 10);
  assert.equal(c.size(), 4);
});

test('metrics without labels always show their one sample; values print as the format spells them', () => {
  const registry = createRegistry();
  registry.gauge('t_gauge', 'One.');
  registry.counter('t_labelled_total', 'None yet.', ['x']);
  const text = registry.render();
  assert.ok(text.includes('\nt_gauge 0\n'), text);
  assert.equal(parseExposition(text).get('t_labelled_total')!.samples.length, 0);
  assert.deepEqual(
    [formatValue(Infinity), formatValue(-Infinity), formatValue(NaN), formatValue(0.25)],
    ['+Inf', '-Inf', 'NaN', '0.25'],
  );
});

test('refuses names the format cannot carry and a histogram label called le', () => {
  const registry = createRegistry();
  assert.throws(() => registry.counter('bad-name', 'x'), /bad metric name/);
  assert.throws(() => registry.counter('ok_total', 'x', ['bad-label']), /bad label name/);
  assert.throws(() => registry.histogram('h', 'x', ['le'], [1]), /bad label name/);
  assert.throws(() => registry.histogram('h2', 'x', [], [1, 1]), /increasing/);
  registry.counter('dup_total', 'x');
  assert.throws(() => registry.counter('dup_total', 'x'), /duplicate/);
});

test('the strict parser refuses what a scraper would', () => {
  for (const bad of [
    'x 1',
    'x{a="1} 1\n',
    'x{a="\\t"} 1\n',
    'x one\n',
    '# TYPE x countr\n',
    'x 1\n# TYPE x counter\n',
    'x{1a="b"} 1\n',
  ]) {
    assert.throws(() => parseExposition(bad), Error, JSON.stringify(bad));
  }
  assert.throws(
    () => parseExposition('# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_count 1\nh_sum 0\n'),
    /out of order/,
  );
  assert.throws(() => parseExposition('# TYPE h histogram\nh_bucket{le="1"} 1\nh_count 1\nh_sum 0\n'), /\+Inf/);
});

test("several threads' registries render as one: counters and histograms add, a gauge adds or takes the max", () => {
  // Two edge threads' registries of the same metrics, and a third thread's own metric; snapshots cross a port
  // as structured clones.
  const thread = () => {
    const r = createRegistry();
    return {
      r,
      calls: r.counter('t_calls_total', 'Calls.', ['route']),
      inflight: r.gauge('t_inflight', 'In flight.'),
      lag: r.gauge('t_lag_seconds', 'Worst lag.', [], 'max'),
      took: r.histogram('t_seconds', 'Durations.', ['route'], [0.1, 1]),
    };
  };
  const a = thread();
  const b = thread();
  a.calls.labels('chat').inc(3);
  b.calls.labels('chat').inc(4);
  b.calls.labels('embed').inc(1);
  a.inflight.labels().set(2);
  b.inflight.labels().set(5);
  a.lag.labels().set(0.25);
  b.lag.labels().set(0.5);
  a.took.labels('chat').observe(0.05);
  b.took.labels('chat').observe(0.5);
  b.took.labels('chat').observe(5);
  const c = createRegistry();
  c.counter('t_only_there_total', 'Only on the third thread.').labels().inc(7);
  const other = c.histogram('t_seconds', 'Other bounds.', ['route'], [0.5]);
  other.labels('chat').observe(0.2);

  const text = a.r.render([structuredClone(b.r.snapshot()), structuredClone(c.snapshot())]);
  const families = parseExposition(text);
  assert.equal(sampleValue(families, 't_calls_total', { route: 'chat' }), 7);
  assert.equal(sampleValue(families, 't_calls_total', { route: 'embed' }), 1);
  assert.equal(sampleValue(families, 't_inflight', {}), 7);
  assert.equal(sampleValue(families, 't_lag_seconds', {}), 0.5);
  const bucket = (le: string) => sampleValue(families, 't_seconds_bucket', { route: 'chat', le });
  // The third thread's histogram has other bounds: its buckets cannot add, so it is left out.
  assert.deepEqual([bucket('0.1'), bucket('1'), bucket('+Inf')], [1, 2, 3]);
  assert.equal(sampleValue(families, 't_seconds_count', { route: 'chat' }), 3);
  assert.ok(Math.abs(sampleValue(families, 't_seconds_sum', { route: 'chat' }) - 5.55) < 1e-9);
  assert.equal(sampleValue(families, 't_only_there_total', {}), 7);
  // A thread that has not yet observed a labelled histogram knows no bounds for it: the others' series still add.
  const idle = thread();
  const merged = parseExposition(idle.r.render([structuredClone(b.r.snapshot())]));
  assert.equal(sampleValue(merged, 't_seconds_count', { route: 'chat' }), 2);
  // One HELP and TYPE per metric, and the threads' own registries are left as they were.
  assert.equal(text.split('# TYPE t_calls_total counter').length, 2);
  assert.equal(a.calls.labels('chat').value, 3);
  assert.equal(b.took.labels('chat').count, 2);
});

test('alone, a registry renders as it did before snapshots existed', () => {
  const r = createRegistry();
  r.counter('t_total', 'Total.', ['k']).labels('x').inc(2);
  r.histogram('t_seconds', 'Durations.', [], [1]).labels().observe(0.5);
  assert.equal(r.render(), r.render([]));
  assert.equal(
    r.render(),
    '# HELP t_total Total.\n# TYPE t_total counter\nt_total{k="x"} 2\n' +
      '# HELP t_seconds Durations.\n# TYPE t_seconds histogram\n' +
      't_seconds_bucket{le="1"} 1\nt_seconds_bucket{le="+Inf"} 1\nt_seconds_sum 0.5\nt_seconds_count 1\n',
  );
});
