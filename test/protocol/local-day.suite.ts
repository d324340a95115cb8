import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { addDays, daysBetween, localDayOf, nextLocalMidnight } from '../../protocol/local-day.ts';

describe('local days', () => {
  it('moves across month, year and leap-day boundaries by calendar days', () => {
    assert.equal(addDays('2026-03-01', -1), '2026-02-28');
    assert.equal(addDays('2024-03-01', -1), '2024-02-29');
    assert.equal(addDays('2025-12-31', 1), '2026-01-01');
    assert.equal(addDays('2026-12-31', -364), '2026-01-01');
    assert.equal(addDays('0050-01-01', 1), '0050-01-02');
  });

  it('counts days between two days', () => {
    assert.equal(daysBetween('2026-01-01', '2026-12-31'), 364);
    assert.equal(daysBetween('2026-01-02', '2026-01-01'), -1);
    assert.equal(daysBetween('2024-02-28', '2024-03-01'), 2);
  });

  it('names the local day of a timestamp and the next local midnight', () => {
    const t = new Date(2026, 6, 4, 13, 30).getTime();
    assert.equal(localDayOf(t), '2026-07-04');
    assert.equal(nextLocalMidnight(t), new Date(2026, 6, 5).getTime());
  });
});
