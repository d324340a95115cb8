import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import type { ModelPricing } from '../../../protocol/http/catalog.ts';
import { packRecord, RECORD_SLOTS } from '../../../protocol/meter.ts';
import { JOURNAL_DIR, openUsageJournal } from '../../../store/usage-journal.ts';
import type { MeterOptions } from '../../../workers/meter/actor.ts';
import { ALL, harness as startHarness, held, recordAll } from '../../helpers/meter-harness.ts';
import { removeDirs, tempDataDir, usageEvent } from '../../helpers/usage.ts';

// The usage journal (store/usage-journal.ts) as the meter uses it: what a start before this one journaled and
// never committed is metered at this start, once; what was committed is not metered again.

const dirs: string[] = [];
after(() => removeDirs(dirs));
const harness = (over?: Partial<MeterOptions>, dir?: string) => startHarness(dirs, over, dir);
const journalNames = (dir: string) => {
  try {
    return readdirSync(join(dir, JOURNAL_DIR)).sort();
  } catch {
    return [];
  }
};
const PRICE: ModelPricing = {
  inputPerMTok: 1,
  outputPerMTok: 2,
  cachedInputPerMTok: 0.5,
  cacheWritePerMTok: null,
  cacheWrite1hPerMTok: null,
  currency: 'USD',
};

describe('usage journal replay', () => {
  it('a start after a crash meters what the last one journaled and never committed, exactly once', async () => {
    // Nothing commits on a timer: the last three records are folded but not committed when the worker dies,
    // as they would be when the whole process is killed.
    const first = harness({ commitMs: 60_000, postEveryMs: 0 });
    recordAll(
      first.meter,
      Array.from({ length: 5 }, () => usageEvent()),
    );
    await first.meter.flush();
    recordAll(
      first.meter,
      Array.from({ length: 3 }, () => usageEvent({ tokenId: 'tok_late' })),
    );
    const replacement = first.nextWorker();
    await first.current().terminate();
    await held(replacement);
    assert.equal(first.repo.summary(ALL).totals.requests, 5);
    await first.done();
    assert.equal(journalNames(first.dir).length, 1, 'its file stays: three records in it are not committed');

    const second = harness({}, first.dir);
    assert.deepEqual(await second.meter.recover(), { records: 3, files: 1 });
    assert.equal(second.repo.summary(ALL).totals.requests, 8);
    assert.deepEqual(
      second.repo.breakdown(ALL, 'token', 10).data.map((r) => [r.tokenId, r.requests]),
      [
        ['tok_a', 5],
        ['tok_late', 3],
      ],
    );
    assert.deepEqual(journalNames(first.dir), [], 'the replayed file is gone');
    const line = second.lines.find((l) => l.msg === 'usage of calls before an unclean stop metered from its journal');
    assert.deepEqual([line?.records, line?.damaged], [3, 0]);
    await second.done();

    const third = harness({}, first.dir);
    assert.deepEqual(await third.meter.recover(), { records: 0, files: 0 });
    assert.equal(third.repo.summary(ALL).totals.requests, 8, 'nothing counted twice');
    await third.done();
  });

  it("an edge thread's records are metered where it journaled them, and priced at the replay", async () => {
    const priceOf = () => ({ pricing: PRICE, source: 'catalog' as const });
    const before = harness({ run: 'crashed', priceOf });
    const edge = openUsageJournal({ dataDir: before.dir, run: 'crashed', writer: 'edge1', onFailure: assert.fail });
    const marks = [0, 1, 2].map(() => {
      const fields: unknown[] = [];
      packRecord(fields, usageEvent());
      return edge.append(fields, 0, RECORD_SLOTS)!;
    });
    // The control thread metered the first, with the edge thread's mark; the other two never reached it.
    before.meter.record(usageEvent(), marks[0]!);
    await before.meter.flush();
    await before.done();
    edge.close();
    assert.deepEqual(journalNames(before.dir), ['crashed-edge1-000001.jnl'], 'not wholly committed: it stays');

    const after = harness({ priceOf }, before.dir);
    assert.deepEqual(await after.meter.recover(), { records: 2, files: 1 });
    const t = after.repo.summary(ALL).totals;
    // Each call 10 in (2 cached), 5 out: 8 x 1 + 2 x 0.5 + 5 x 2 = 19 micro-dollars, replayed ones priced now.
    assert.deepEqual([t.requests, t.estimatedCostUsd], [3, 57e-6]);
    await after.done();
  });

  it('a damaged record is skipped and counted; the records around it are metered', async () => {
    const dir = tempDataDir(dirs);
    const journal = openUsageJournal({ dataDir: dir, run: 'old', writer: 'control', onFailure: assert.fail });
    const good: unknown[] = [];
    packRecord(good, usageEvent());
    journal.append(good, 0, RECORD_SLOTS);
    journal.append(['not', 'a', 'record'], 0, 3);
    const wrong = [...good];
    wrong[4] = 'chat.unheard_of';
    journal.append(wrong, 0, RECORD_SLOTS);
    journal.append(good, 0, RECORD_SLOTS);
    journal.close();
    const h = harness({}, dir);
    assert.deepEqual(await h.meter.recover(), { records: 2, files: 1 });
    assert.equal(h.repo.summary(ALL).totals.requests, 2);
    const line = h.lines.find((l) => l.msg === 'usage of calls before an unclean stop metered from its journal');
    assert.equal(line?.damaged, 2);
    await h.done();
  });

  it("a writer's earlier files go once a later one has a commit, and a clean stop leaves none", async () => {
    const h = harness({ journalRotateBytes: 1, postEveryMs: 0 });
    for (let i = 0; i < 3; i++) {
      recordAll(h.meter, [usageEvent()]);
      await h.meter.flush();
    }
    const names = journalNames(h.dir);
    assert.equal(names.length, 1, `the committed files before the last are gone: ${names.join(' ')}`);
    assert.match(names[0]!, /-control-000003\.jnl$/);
    await h.done();
    assert.deepEqual(journalNames(h.dir), []);
    const again = harness({}, h.dir);
    assert.deepEqual(await again.meter.recover(), { records: 0, files: 0 });
    assert.equal(again.repo.summary(ALL).totals.requests, 3);
    await again.done();
  });
});
