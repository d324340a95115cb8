import assert from 'node:assert/strict';
import { MessageChannel } from 'node:worker_threads';
import { test } from 'node:test';
import { isDeepStrictEqual } from 'node:util';
import { buildCatalog, createCatalogMirror, type CatalogChange, type CatalogIndex } from '../../state/catalog-index.ts';
import type { Catalog } from '../../protocol/catalog.ts';
import { listingOf, provider, record } from '../helpers/catalog.ts';
import { prng } from '../helpers/prng.ts';

const PROVIDERS = ['a', 'b', 'c'];
const MODELS = ['m1', 'm2', 'm3', 'm4'];

/** Everything a reader of the catalog can see, for comparing two catalogs. */
function seen(c: Catalog) {
  const names = [...PROVIDERS.flatMap((p) => MODELS.map((m) => `${p}/${m}`)), 'fast', 'smart', 'nope'];
  return {
    all: c.all(),
    discoverable: c.discoverable(),
    providers: c
      .providerIds()
      .sort()
      .map((id) => c.provider(id)),
    resolved: names.map((n) => c.resolve(n)),
    aliases: ['fast', 'smart'].map((a) => c.aliasOwner(a)),
  };
}

/** Fails naming the first view in which two catalogs differ (a deep diff of whole catalogs takes minutes). */
function assertSame(a: Catalog, b: Catalog, when: string): void {
  const [x, y] = [seen(a), seen(b)];
  for (const key of Object.keys(x) as (keyof typeof x)[]) {
    assert.ok(isDeepStrictEqual(x[key], y[key]), `${when}: ${key} differs`);
  }
}

/** One random write, made on `source` through the index's own methods. */
function randomWrite(source: CatalogIndex, random: () => number): void {
  const pick = <T>(list: readonly T[]) => list[Math.floor(random() * list.length)]!;
  const p = pick(PROVIDERS);
  const m = pick(MODELS);
  switch (Math.floor(random() * 6)) {
    case 0:
    case 1:
      source.putRecord(
        record(p, m, {
          hidden: random() < 0.2,
          displayName: `v${Math.floor(random() * 9)}`,
          aliases: random() < 0.3 ? [pick(['fast', 'smart'])] : [],
        }),
      );
      return;
    case 2:
      source.removeRecord(`${p}/${m}`);
      return;
    case 3:
      source.putProvider(p, random() < 0.15 ? null : provider(p, { enabled: random() < 0.8 }));
      return;
    case 4:
      source.putProvider(p, source.provider(p) ?? provider(p), listingOf(MODELS.filter(() => random() < 0.5)));
      return;
    default:
      source.putProvider(p, source.provider(p) ?? null, null);
  }
}

test('a mirror fed what its source sends stays equal to it through 400 random writes', () => {
  const random = prng(0xca7);
  const source = buildCatalog(
    [provider('a'), provider('b', { enabled: false })],
    [record('a', 'm1', { aliases: ['fast'] })],
    new Map([['a', listingOf(['m1', 'm2'])]]),
  );
  const mirror = createCatalogMirror();
  const changes: CatalogChange[] = [];
  source.follow((change) => {
    changes.push(change);
    mirror.apply(change);
  });
  assertSame(mirror.current(), source, 'at first');
  for (let i = 0; i < 400; i++) {
    randomWrite(source, random);
    assertSame(mirror.current(), source, `after write ${i}: ${JSON.stringify(changes.at(-1)).slice(0, 300)}`);
  }
  // A copy that starts late gets the whole catalog first, then stays equal too.
  const late = createCatalogMirror();
  const stop = source.follow((change) => late.apply(change));
  for (let i = 0; i < 50; i++) randomWrite(source, random);
  assertSame(late.current(), source, 'a late follower');
  stop();
  const before = changes.length;
  randomWrite(source, random);
  assert.equal(changes.length, before + 1, 'the first follower still hears');
});

test('the changes cross a MessagePort as they are (plain data): a mirror on the far side stays equal', async () => {
  const random = prng(0xbee);
  const source = buildCatalog([provider('a')], [], new Map());
  const { port1, port2 } = new MessageChannel();
  const mirror = createCatalogMirror();
  let received = 0;
  port2.on('message', (change: CatalogChange) => {
    mirror.apply(change);
    received++;
  });
  let sent = 0;
  source.follow((change) => {
    port1.postMessage(change);
    sent++;
  });
  for (let i = 0; i < 100; i++) randomWrite(source, random);
  for (let turn = 0; received < sent && turn < 10_000; turn++) await new Promise((r) => setImmediate(r));
  assert.equal(received, sent, 'every change arrived');
  assertSame(mirror.current(), source, 'across the port');
  port1.close();
});

test("settled waits for each follower's acknowledgement of what it was told; a failed one holds nothing", async () => {
  const source = buildCatalog([provider('a')], [], new Map());
  const far = createCatalogMirror();
  const held: (() => void)[] = [];
  source.follow((change) => {
    if ('whole' in change) return far.apply(change);
    return new Promise<void>((resolve) =>
      held.push(() => {
        far.apply(change);
        resolve();
      }),
    );
  });
  source.follow((change) => ('whole' in change ? undefined : Promise.reject(new Error('thread gone'))));
  source.putRecord(record('a', 'm1', { hidden: true }));
  let settled = false;
  const waiting = source.settled().then(() => (settled = true));
  for (let turn = 0; turn < 20; turn++) await new Promise((r) => setImmediate(r));
  assert.equal(settled, false);
  assert.equal(far.current().get('a/m1'), undefined);
  held.shift()!();
  await waiting;
  assert.equal(far.current().get('a/m1')?.hidden, true);
  // Nothing is left to wait for.
  await source.settled();
});
