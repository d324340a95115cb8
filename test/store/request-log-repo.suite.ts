import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, describe, it } from 'node:test';
import { newId } from '../../protocol/ids.ts';
import type { RequestLogEntry } from '../../protocol/http/request-log.ts';
import { openStoreEnv } from '../../store/env.ts';
import { entryBytes, requestLogRepo, requestLogSink } from '../../store/request-log-repo.ts';

// The request log's store: newest first, filters, cursors, and both bounds (bytes and days) with a clock of the
// test's own, on the oldest entries first.

const DAY = 86_400_000;
const T0 = Date.UTC(2026, 0, 10, 12);

function entry(at: number, over: Partial<RequestLogEntry> = {}, bodyText = 'x'.repeat(100)): RequestLogEntry {
  return {
    id: newId('req_', at),
    receivedAt: new Date(at).toISOString(),
    startedAt: new Date(at + 1).toISOString(),
    endedAt: new Date(at + 5).toISOString(),
    op: 'chat.completions',
    method: 'POST',
    path: '/v1/chat/completions',
    clientModel: 'gpt-test',
    modelId: 'openai/gpt-test',
    providerId: 'openai',
    credentialId: null,
    tokenId: 'tok_01KAAAAAAAAAAAAAAAAAAAAAAA',
    session: null,
    outcome: 'ok',
    status: 200,
    errorCode: null,
    stream: false,
    firstByteMs: 1,
    durationMs: 5,
    usage: null,
    costUsd: null,
    query: '',
    request: { headers: {}, body: { text: bodyText, bytes: bodyText.length, truncated: false } },
    response: { headers: {}, body: { text: '{}', bytes: 2, truncated: false } },
    error: null,
    ...over,
  };
}

describe('requestLogRepo', () => {
  const dir = mkdtempSync(join(tmpdir(), 'switchyard-request-log-'));
  const env = openStoreEnv(dir);
  let clock = T0;
  const repo = requestLogRepo(env, () => clock);
  const roomy = { maxBytes: 1 << 30, retentionDays: 90 };
  after(async () => {
    await env.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('lists newest first without bodies, filters, and pages by cursor', async () => {
    const a = entry(T0, { session: 's1' });
    const b = entry(T0 + 1000, { session: 's2', outcome: 'failed', status: 502, errorCode: 'UPSTREAM_ERROR' });
    const c = entry(T0 + 2000, { session: 's1', clientModel: 'claude', modelId: 'anthropic/claude' });
    for (const e of [a, b, c]) await repo.append(e, roomy);
    const all = repo.list({ limit: 50 });
    assert.deepEqual(
      all.data.map((i) => i.id),
      [c.id, b.id, a.id],
    );
    assert.equal(all.nextCursor, null);
    assert.ok(!('request' in all.data[0]!) && !('response' in all.data[0]!), 'no bodies in a list');
    assert.deepEqual(
      repo.list({ limit: 50, session: 's1' }).data.map((i) => i.id),
      [c.id, a.id],
    );
    assert.deepEqual(
      repo.list({ limit: 50, model: 'claude' }).data.map((i) => i.id),
      [c.id],
    );
    assert.deepEqual(
      repo.list({ limit: 50, model: 'openai/gpt-test' }).data.map((i) => i.id),
      [b.id, a.id],
    );
    assert.deepEqual(
      repo.list({ limit: 50, outcome: 'failed' }).data.map((i) => i.id),
      [b.id],
    );
    assert.deepEqual(
      repo.list({ limit: 50, status: 200 }).data.map((i) => i.id),
      [c.id, a.id],
    );
    assert.deepEqual(
      repo.list({ limit: 50, from: T0 + 1000, to: T0 + 1000 }).data.map((i) => i.id),
      [b.id],
      'from and to are inclusive',
    );
    const first = repo.list({ limit: 2 });
    assert.deepEqual(
      first.data.map((i) => i.id),
      [c.id, b.id],
    );
    assert.equal(first.nextCursor, b.id);
    const second = repo.list({ limit: 2, cursor: first.nextCursor! });
    assert.deepEqual(
      second.data.map((i) => i.id),
      [a.id],
    );
    assert.equal(second.nextCursor, null);
    assert.deepEqual(repo.get(b.id), b, 'the whole entry by ID');
  });

  it('the byte bound drops the oldest entries first, on write', async () => {
    await repo.prune({ maxBytes: 0, retentionDays: 90 });
    assert.equal(repo.totalBytes(), 0);
    const made = Array.from({ length: 6 }, (_, i) => entry(T0 + 10_000 + i * 1000, {}, 'y'.repeat(1000)));
    const size = entryBytes(made[0]!);
    const bound = { maxBytes: size * 3 + size / 2, retentionDays: 90 };
    for (const e of made) await repo.append(e, bound);
    assert.deepEqual(
      repo.list({ limit: 50 }).data.map((i) => i.id),
      made
        .slice(3)
        .reverse()
        .map((e) => e.id),
    );
    assert.equal(repo.get(made[0]!.id), undefined, 'the oldest entry is gone with its body');
    assert.ok(repo.totalBytes() <= bound.maxBytes, `${repo.totalBytes()} <= ${bound.maxBytes}`);
    assert.equal(repo.totalBytes(), size * 3);
  });

  it('an entry larger than the whole bound is kept without its bodies', async () => {
    const big = entry(T0 + 20_000, {}, 'z'.repeat(5000));
    await repo.append(big, { maxBytes: 3000, retentionDays: 90 });
    const kept = repo.get(big.id)!;
    assert.equal(kept.request.body.text, null);
    assert.equal(kept.request.body.truncated, true);
    assert.equal(kept.request.body.bytes, 5000);
  });

  it('the day bound drops entries older than retentionDays, on write and on prune', async () => {
    await repo.prune({ maxBytes: 0, retentionDays: 90 });
    const old = entry(T0);
    const recent = entry(T0 + 3 * DAY);
    clock = T0 + 3 * DAY;
    await repo.append(old, { maxBytes: 1 << 30, retentionDays: 7 });
    await repo.append(recent, { maxBytes: 1 << 30, retentionDays: 7 });
    assert.equal(repo.list({ limit: 50 }).data.length, 2, 'three days old is within seven');
    clock = T0 + 8 * DAY;
    assert.equal(await repo.prune({ maxBytes: 1 << 30, retentionDays: 7 }), 1);
    assert.deepEqual(
      repo.list({ limit: 50 }).data.map((i) => i.id),
      [recent.id],
    );
    clock = T0 + 11 * DAY;
    await repo.append(entry(T0 + 11 * DAY), { maxBytes: 1 << 30, retentionDays: 7 });
    assert.equal(repo.get(recent.id), undefined, 'dropped by the next write');
  });

  it('the sink is on for every token, or only for the listed ones', () => {
    let s = { enabled: false, tokenIds: ['tok_A'], retentionDays: 7, maxMegabytes: 1 };
    const sink = requestLogSink(
      repo,
      () => s,
      (err) => assert.fail(String(err)),
    );
    assert.equal(sink.on('tok_A'), true);
    assert.equal(sink.on('tok_B'), false);
    s = { ...s, tokenIds: [] };
    assert.equal(sink.on('tok_A'), false, 'a new settings object is read again');
    s = { ...s, enabled: true };
    assert.equal(sink.on('tok_B'), true);
    const off = requestLogSink(
      repo,
      () => null,
      (err) => assert.fail(String(err)),
    );
    assert.equal(off.on('tok_A'), false, 'no settings yet: off');
  });
});
