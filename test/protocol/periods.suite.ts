import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { BudgetPeriod } from '../../protocol/gauge-money.ts';
import { periodBounds } from '../../protocol/periods.ts';

// Budget periods roll over at local midnight, ISO week start (Monday) and the 1st of the month, in zones with
// DST: instants on both sides of each boundary, and periods that contain a DST change. Node reads TZ again
// whenever process.env.TZ is assigned, so each test names its zone.

const at = (iso: string) => Date.parse(iso);
const iso = (ms: number) => new Date(ms).toISOString();

function bounds(period: BudgetPeriod, instant: string) {
  const b = periodBounds(period, at(instant));
  return [iso(b.start), iso(b.end), b.firstDay, b.lastDay];
}

describe('periodBounds in America/New_York', () => {
  it('a day starts at local midnight on both sides of it, and a DST day is 23 or 25 hours', () => {
    process.env.TZ = 'America/New_York';
    // 23:59:59.999 EDT on July 3, then midnight EDT on July 4.
    assert.deepEqual(bounds('day', '2026-07-04T03:59:59.999Z'), [
      '2026-07-03T04:00:00.000Z',
      '2026-07-04T04:00:00.000Z',
      '2026-07-03',
      '2026-07-03',
    ]);
    assert.deepEqual(bounds('day', '2026-07-04T04:00:00.000Z'), [
      '2026-07-04T04:00:00.000Z',
      '2026-07-05T04:00:00.000Z',
      '2026-07-04',
      '2026-07-04',
    ]);
    // March 8, 2026: clocks go from 02:00 EST to 03:00 EDT; midnight is EST, the next one EDT.
    assert.deepEqual(bounds('day', '2026-03-08T12:00:00.000Z'), [
      '2026-03-08T05:00:00.000Z',
      '2026-03-09T04:00:00.000Z',
      '2026-03-08',
      '2026-03-08',
    ]);
    // November 1, 2026: back from 02:00 EDT to 01:00 EST, a 25-hour day.
    assert.deepEqual(bounds('day', '2026-11-01T05:30:00.000Z'), [
      '2026-11-01T04:00:00.000Z',
      '2026-11-02T05:00:00.000Z',
      '2026-11-01',
      '2026-11-01',
    ]);
    assert.deepEqual(bounds('day', '2026-11-02T04:59:59.999Z'), [
      '2026-11-01T04:00:00.000Z',
      '2026-11-02T05:00:00.000Z',
      '2026-11-01',
      '2026-11-01',
    ]);
  });

  it('a week runs Monday 00:00 to Monday 00:00 local, across the spring change', () => {
    process.env.TZ = 'America/New_York';
    // Sunday March 8, 23:59:59.999 EDT belongs to the week of Monday March 2 (which began in EST).
    assert.deepEqual(bounds('week', '2026-03-09T03:59:59.999Z'), [
      '2026-03-02T05:00:00.000Z',
      '2026-03-09T04:00:00.000Z',
      '2026-03-02',
      '2026-03-08',
    ]);
    assert.deepEqual(bounds('week', '2026-03-09T04:00:00.000Z'), [
      '2026-03-09T04:00:00.000Z',
      '2026-03-16T04:00:00.000Z',
      '2026-03-09',
      '2026-03-15',
    ]);
    // A Monday is the first day of its own week, not the last of the one before.
    assert.deepEqual(bounds('week', '2026-11-23T15:00:00.000Z'), [
      '2026-11-23T05:00:00.000Z',
      '2026-11-30T05:00:00.000Z',
      '2026-11-23',
      '2026-11-29',
    ]);
  });

  it('a month runs from the 1st 00:00 local, across the year end and a DST change', () => {
    process.env.TZ = 'America/New_York';
    assert.deepEqual(bounds('month', '2026-04-01T03:59:59.999Z'), [
      '2026-03-01T05:00:00.000Z',
      '2026-04-01T04:00:00.000Z',
      '2026-03-01',
      '2026-03-31',
    ]);
    assert.deepEqual(bounds('month', '2026-04-01T04:00:00.000Z'), [
      '2026-04-01T04:00:00.000Z',
      '2026-05-01T04:00:00.000Z',
      '2026-04-01',
      '2026-04-30',
    ]);
    // 23:00 EST on December 31 is already 2027 in UTC, still December here.
    assert.deepEqual(bounds('month', '2027-01-01T04:00:00.000Z'), [
      '2026-12-01T05:00:00.000Z',
      '2027-01-01T05:00:00.000Z',
      '2026-12-01',
      '2026-12-31',
    ]);
    assert.deepEqual(bounds('month', '2024-02-29T12:00:00.000Z'), [
      '2024-02-01T05:00:00.000Z',
      '2024-03-01T05:00:00.000Z',
      '2024-02-01',
      '2024-02-29',
    ]);
  });
});

describe('periodBounds in Europe/Berlin', () => {
  it('day, week and month bounds move with CET/CEST', () => {
    process.env.TZ = 'Europe/Berlin';
    // March 29, 2026: 02:00 CET becomes 03:00 CEST. The day is 23 hours long.
    assert.deepEqual(bounds('day', '2026-03-29T10:00:00.000Z'), [
      '2026-03-28T23:00:00.000Z',
      '2026-03-29T22:00:00.000Z',
      '2026-03-29',
      '2026-03-29',
    ]);
    // That Sunday closes the week of Monday March 23; Monday March 30 00:00 CEST starts the next.
    assert.deepEqual(bounds('week', '2026-03-29T21:59:59.999Z'), [
      '2026-03-22T23:00:00.000Z',
      '2026-03-29T22:00:00.000Z',
      '2026-03-23',
      '2026-03-29',
    ]);
    assert.deepEqual(bounds('week', '2026-03-29T22:00:00.000Z'), [
      '2026-03-29T22:00:00.000Z',
      '2026-04-05T22:00:00.000Z',
      '2026-03-30',
      '2026-04-05',
    ]);
    // October 25, 2026: back to CET. October starts in CEST, November in CET.
    assert.deepEqual(bounds('month', '2026-10-31T22:59:59.999Z'), [
      '2026-09-30T22:00:00.000Z',
      '2026-10-31T23:00:00.000Z',
      '2026-10-01',
      '2026-10-31',
    ]);
    assert.deepEqual(bounds('month', '2026-10-31T23:00:00.000Z'), [
      '2026-10-31T23:00:00.000Z',
      '2026-11-30T23:00:00.000Z',
      '2026-11-01',
      '2026-11-30',
    ]);
  });
});
