import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { collector } from '../../../../workers/gauge/collectors/statuspage/index.ts';
import { CollectorError, type CollectContext } from '../../../../workers/gauge/collectors/types.ts';
import { OPERATIONAL, startFakeStatusPage, type FakeStatusPage } from '../../../fakes/gauge/statuspage.ts';

const NOW = new Date('2026-11-24T15:00:00.000Z');

function ctx(config: Record<string, unknown>, signal = new AbortController().signal): CollectContext {
  return { accountId: 'status-openai', credential: null, config, signal, now: () => NOW, state: null };
}

describe('statuspage collector', () => {
  let page: FakeStatusPage;
  before(async () => {
    page = await startFakeStatusPage();
  });
  after(async () => {
    await page.close();
  });

  const collect = (config: Record<string, unknown> = {}) =>
    collector.collect(ctx({ baseUrl: page.origin, providerId: 'openai', ...config }));

  it('reads an operational page into indicator none with its components', async () => {
    page.setSummary(OPERATIONAL);
    const result = await collect();
    assert.deepEqual(result.readings, []);
    assert.deepEqual(result.statuses, [
      {
        providerId: 'openai',
        indicator: 'none',
        description: 'All Systems Operational',
        components: [
          { name: 'API', status: 'operational' },
          { name: 'ChatGPT', status: 'operational' },
        ],
        incidents: [],
        observedAt: NOW.toISOString(),
      },
    ]);
    assert.equal(page.server.requests.at(-1)?.path, '/api/v2/summary.json');
    assert.equal(page.server.requests.at(-1)?.headers.authorization, undefined);
  });

  it('reads a major outage with its incident; group components are left out', async () => {
    page.setSummary({
      indicator: 'major',
      description: 'Partial System Outage',
      components: [
        { name: 'APIs', status: 'major_outage', group: true },
        { name: 'Chat Completions', status: 'major_outage' },
        { name: 'Files', status: 'degraded_performance' },
      ],
      incidents: [
        {
          name: 'Elevated error rates',
          status: 'investigating',
          impact: 'major',
          updatedAt: '2026-11-24T14:40:00-05:00',
        },
      ],
    });
    const [status] = (await collect()).statuses ?? [];
    assert.equal(status?.indicator, 'major');
    assert.deepEqual(status?.components, [
      { name: 'Chat Completions', status: 'major_outage' },
      { name: 'Files', status: 'degraded_performance' },
    ]);
    assert.deepEqual(status?.incidents, [
      { name: 'Elevated error rates', status: 'investigating', impact: 'major', updatedAt: '2026-11-24T19:40:00.000Z' },
    ]);
  });

  it('reads maintenance in progress on an otherwise clear page as maintenance', async () => {
    page.setSummary({ ...OPERATIONAL, maintenances: [{ name: 'Database upgrade', status: 'in_progress' }] });
    assert.equal((await collect()).statuses?.[0]?.indicator, 'maintenance');
  });

  it('bounds component and incident counts and string lengths', async () => {
    page.setSummary({
      indicator: 'minor',
      description: 'x'.repeat(5000),
      components: Array.from({ length: 80 }, (_, i) => ({
        name: `${'c'.repeat(300)}${i}`,
        status: 'operational' as const,
      })),
      incidents: Array.from({ length: 30 }, (_, i) => ({
        name: `incident ${i}\u0007`,
        status: 'monitoring' as const,
        impact: 'minor' as const,
        updatedAt: 'not a date',
      })),
    });
    const [status] = (await collect()).statuses ?? [];
    assert.equal(status?.components.length, 50);
    assert.equal(status?.incidents.length, 20);
    assert.equal(status?.description?.length, 200);
    assert.equal(status?.components[0]?.name.length, 200);
    assert.deepEqual(status?.incidents[0], {
      name: 'incident 0',
      status: 'monitoring',
      impact: 'minor',
      updatedAt: null,
    });
  });

  it('reads a page that is not JSON as unknown, not an outage', async () => {
    page.rawNext('<html><body>Status</body></html>');
    const [status] = (await collect()).statuses ?? [];
    assert.equal(status?.indicator, 'unknown');
    assert.equal(status?.description, 'Status feed unreadable: not JSON.');
    assert.deepEqual([status?.components, status?.incidents], [[], []]);
  });

  it('reads JSON of another shape (an Instatus page) as unknown', async () => {
    page.server.failNext(200, {
      page: { name: 'Example', url: page.origin, status: 'HASISSUES' },
      activeIncidents: [],
    });
    assert.equal((await collect()).statuses?.[0]?.indicator, 'unknown');
  });

  it('reads a 500 as unknown and a 429 as unknown with its Retry-After', async () => {
    page.server.failNext(500, { error: 'internal' });
    const failed = await collect();
    assert.equal(failed.statuses?.[0]?.indicator, 'unknown');
    assert.equal(failed.statuses?.[0]?.description, 'Status feed unreadable: HTTP 500.');
    assert.equal(failed.retryAfterMs, undefined);
    page.server.failNext(429, { error: 'slow down' }, { 'retry-after': '120' });
    const limited = await collect();
    assert.equal(limited.statuses?.[0]?.indicator, 'unknown');
    assert.equal(limited.retryAfterMs, 120_000);
  });

  it('reads an unreachable page as unknown', async () => {
    const gone = await startFakeStatusPage();
    await gone.close();
    const result = await collector.collect(ctx({ baseUrl: gone.origin }));
    assert.equal(result.statuses?.[0]?.indicator, 'unknown');
    assert.equal(result.statuses?.[0]?.description, 'Status feed unreadable: unreachable.');
  });

  it('fails as timeout when its time limit aborts a page that never answers', async () => {
    page.server.hangNext();
    const controller = new AbortController();
    const pending = collector.collect(ctx({ baseUrl: page.origin }, controller.signal));
    // Abort once the request has reached the fake, not after a guessed delay.
    const count = page.server.requests.length;
    while (page.server.requests.length === count) await new Promise((resolve) => setImmediate(resolve));
    controller.abort();
    await assert.rejects(pending, (err: unknown) => err instanceof CollectorError && err.code === 'timeout');
  });

  it('refuses a missing or unsafe baseUrl as not_configured', async () => {
    for (const baseUrl of [
      undefined,
      'ftp://example.com',
      'not a url',
      'https://user:pw@example.com',
      `https://example.com/${'a'.repeat(400)}`,
    ]) {
      await assert.rejects(
        collector.collect(ctx({ baseUrl })),
        (err: unknown) => err instanceof CollectorError && err.code === 'not_configured',
      );
    }
  });
});
