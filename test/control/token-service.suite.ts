import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { createTokenService } from '../../control/token-service.ts';
import { createAuthTable, type AuthChange } from '../../state/auth-table.ts';
import { auditRepo } from '../../store/audit-repo.ts';
import { openStoreEnv } from '../../store/env.ts';
import { metaRepo } from '../../store/meta-repo.ts';
import { tokenRepo } from '../../store/token-repo.ts';
import { answersAfterAcknowledgement, heldFollower } from '../helpers/held-follower.ts';
import { answered, assertNotFound, auditedActions, race } from '../helpers/races.ts';
import { removeDirs, tempDataDir } from '../helpers/usage.ts';

const dirs: string[] = [];
after(() => removeDirs(dirs));
const actor = { actorType: 'system', actorId: 'test' } as const;

function started(localUses?: () => [string, number][], dir = tempDataDir(dirs)) {
  const env = openStoreEnv(dir);
  const tokens = createTokenService({
    env,
    tokens: tokenRepo(env),
    meta: metaRepo(env),
    audit: auditRepo(env),
    tokenFile: join(dir, 'token'),
    ...(localUses && { localUses }),
  });
  return { dir, env, tokens };
}

test("an edge's table follows the tokens: whole at first, then each create, change and revocation", async () => {
  const { env, tokens } = started();
  try {
    const boot = (await tokens.bootstrapIfEmpty())!;
    const changes: AuthChange[] = [];
    const table = createAuthTable();
    const unfollow = tokens.followAuth((c) => {
      changes.push(c);
      table.apply(c);
    });
    assert.deepEqual(
      changes.map((c) => ('whole' in c ? c.whole.map((e) => e.tokenId) : c)),
      [[boot.token.id]],
    );
    assert.equal(table.authenticate(boot.secret).ok, true);

    const made = await tokens.create({ name: 'agent', scopes: ['inference'] }, actor, 'req_1');
    assert.deepEqual(table.authenticate(made.secret), {
      ok: true,
      principal: { tokenId: made.token.id, scopes: ['inference'], serviceAccountId: null },
    });
    await tokens.update(made.token.id, { scopes: ['read'] }, actor, 'req_2');
    assert.deepEqual(table.authenticate(made.secret), {
      ok: true,
      principal: { tokenId: made.token.id, scopes: ['read'], serviceAccountId: null },
    });
    // A rename changes nothing authentication reads: no change is sent.
    const before = changes.length;
    await tokens.update(made.token.id, { name: 'renamed' }, actor, 'req_3');
    assert.equal(changes.length, before);
    await tokens.revoke(made.token.id, actor, 'req_4');
    assert.deepEqual(table.authenticate(made.secret), { ok: false, reason: 'unknown' });
    assert.deepEqual(changes.at(-1), { put: [], remove: [made.token.id] });
    // Never a secret in what is sent.
    assert.ok(!JSON.stringify(changes).includes(made.secret) && !JSON.stringify(changes).includes(boot.secret));

    unfollow();
    await tokens.create({ name: 'later' }, actor, 'req_5');
    assert.equal(changes.length, before + 1);
  } finally {
    await env.close();
  }
});

test("uses an edge noted show as the token's last use at once, and are written by the flush", async () => {
  const table = createAuthTable(() => 5_000);
  const { env, tokens } = started(() => table.takeUses());
  try {
    const boot = (await tokens.bootstrapIfEmpty())!;
    tokens.followAuth((c) => table.apply(c));
    assert.equal(tokens.get(boot.token.id).lastUsedAt, null);
    table.authenticate(boot.secret);
    assert.equal(tokens.get(boot.token.id).lastUsedAt, new Date(5_000).toISOString());
    // Another thread's uses arrive as a batch; an older one does not move the time back, an unknown ID is ignored.
    tokens.noteUses([
      [boot.token.id, 9_000],
      ['tok_unknown', 1],
    ]);
    tokens.noteUses([[boot.token.id, 7_000]]);
    assert.equal(tokens.list()[0]!.lastUsedAt, new Date(9_000).toISOString());
    await tokens.flushLastUsed();
    assert.equal(tokenRepo(env).get(boot.token.id)?.lastUsedAt, 9_000);
  } finally {
    await env.close();
  }
});

test("a revocation answers once every follower, every thread's table, has the change", async () => {
  const { env, tokens } = started();
  try {
    await tokens.bootstrapIfEmpty();
    const made = await tokens.create({ name: 'agent' }, actor, 'req_1');
    // A far table that acknowledges a change only when told to, and one whose thread has gone.
    const far = createAuthTable();
    const held = heldFollower((change: AuthChange) => far.apply(change));
    tokens.followAuth(held.follow);
    tokens.followAuth((change) => ('whole' in change ? undefined : Promise.reject(new Error('thread gone'))));
    assert.equal(far.authenticate(made.secret).ok, true);
    await answersAfterAcknowledgement(tokens.revoke(made.token.id, actor, 'req_2'), held);
    assert.deepEqual(far.authenticate(made.secret), { ok: false, reason: 'unknown' });
  } finally {
    await env.close();
  }
});

/** A live token, and a table that follows the service as an edge thread's does. */
async function followedToken(tokens: ReturnType<typeof started>['tokens']) {
  const table = createAuthTable();
  tokens.followAuth((c) => table.apply(c));
  const made = await tokens.create({ name: 'agent', scopes: ['inference'] }, actor, 'req_1');
  assert.equal(table.authenticate(made.secret).ok, true);
  return { table, id: made.token.id, secret: made.secret };
}

/** After the race: revoked in memory, in the followers' table, in the store, and after the store is reopened. */
async function assertRevoked(
  world: ReturnType<typeof started>,
  table: ReturnType<typeof createAuthTable>,
  id: string,
  secret: string,
) {
  assert.deepEqual(
    world.tokens.list().map((t) => t.id),
    [],
  );
  assert.deepEqual(table.authenticate(secret), { ok: false, reason: 'unknown' });
  await world.env.close();
  const again = started(undefined, world.dir);
  try {
    assert.deepEqual(again.tokens.list(), []);
    const reopened = createAuthTable();
    again.tokens.followAuth((c) => reopened.apply(c));
    assert.deepEqual(reopened.authenticate(secret), { ok: false, reason: 'unknown' });
    assert.equal(tokenRepo(again.env).get(id), undefined);
  } finally {
    await again.env.close();
  }
}

test('a change racing a revocation answers NOT_FOUND and writes nothing: the token stays revoked (W4.6)', async () => {
  const world = started();
  const { table, id, secret } = await followedToken(world.tokens);
  // The revocation queues its commit first; the change reads the token before that commit resolves.
  const [revoked, changed] = await race(
    () => world.tokens.revoke(id, actor, 'req_2'),
    () => world.tokens.update(id, { name: 'x' }, actor, 'req_3'),
  );
  assert.equal(answered(revoked).id, id);
  assertNotFound(changed, /^No token with ID `tok_/);
  assert.deepEqual(auditedActions(world.env, id), ['token.create', 'token.revoke']);
  await assertRevoked(world, table, id, secret);
});

test('a revocation racing an earlier change still revokes (W4.6)', async () => {
  const world = started();
  const { table, id, secret } = await followedToken(world.tokens);
  const [changed, revoked] = await race(
    () => world.tokens.update(id, { scopes: ['read'] }, actor, 'req_2'),
    () => world.tokens.revoke(id, actor, 'req_3'),
  );
  assert.deepEqual(answered(changed).scopes, ['read']);
  assert.equal(answered(revoked).id, id);
  assert.deepEqual(auditedActions(world.env, id), ['token.create', 'token.update', 'token.revoke']);
  await assertRevoked(world, table, id, secret);
});

test('two racing changes of one token both answer; the last committed wins', async () => {
  const world = started();
  try {
    const { id } = await followedToken(world.tokens);
    const [a, b] = await race(
      () => world.tokens.update(id, { name: 'first' }, actor, 'req_2'),
      () => world.tokens.update(id, { name: 'second' }, actor, 'req_3'),
    );
    assert.equal(answered(a).name, 'first');
    assert.equal(answered(b).name, 'second');
    assert.equal(world.tokens.get(id).name, 'second');
    assert.equal(tokenRepo(world.env).get(id)?.name, 'second');
  } finally {
    await world.env.close();
  }
});

test('of two racing revocations of one token, the second is NOT_FOUND and audits nothing', async () => {
  const world = started();
  const { table, id, secret } = await followedToken(world.tokens);
  const [first, second] = await race(
    () => world.tokens.revoke(id, actor, 'req_2'),
    () => world.tokens.revoke(id, actor, 'req_3'),
  );
  answered(first);
  assertNotFound(second, /^No token with ID `tok_/);
  assert.deepEqual(auditedActions(world.env, id), ['token.create', 'token.revoke']);
  await assertRevoked(world, table, id, secret);
});
