import assert from 'node:assert/strict';
import { test } from 'node:test';
import { createRegistry, escapeLabelValue, formatValue, OTHER } from '../../../control/metrics/registry.ts';
import { parseExposition, sampleValue } from '../../helpers/prometheus.ts';

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
