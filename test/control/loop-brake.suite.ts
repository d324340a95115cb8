import assert from 'node:assert/strict';
import { after, test } from 'node:test';
import { pino } from 'pino';
import type { EventBus } from '../../control/events.ts';
import { createLoopBrake } from '../../control/loop-brake.ts';
import { auditRepo } from '../../store/audit-repo.ts';
import { openStoreEnv, type StoreEnv } from '../../store/env.ts';
import { limitRepo } from '../../store/limit-repo.ts';
import { removeDirs, tempDataDir } from '../helpers/usage.ts';

// The loop brake's paused sessions are bounded: past the cap, a new pause resumes the session paused longest
// ago (by the time it was paused, also after a restart), tells the event stream so, and the store agrees.

const dirs: string[] = [];
after(() => removeDirs(dirs));

function brakeOn(env: StoreEnv, clock: { t: number }, published: [string, unknown][]) {
  const bus = { publish: (type: string, data: unknown) => void published.push([type, data]) } as unknown as EventBus;
  return createLoopBrake({
    env,
    repo: limitRepo(env),
    audit: auditRepo(env),
    bus,
    log: pino({ level: 'silent' }),
    now: () => clock.t,
    pausedMax: 2,
  });
}

/** Two calls of `session` with one tool call: the second pauses it (repeats 2). */
function loop(brake: ReturnType<typeof createLoopBrake>, clock: { t: number }, session: string): void {
  for (let i = 0; i < 2; i++) {
    clock.t += 1000;
    brake.observe(session, 'sig', 'read_file');
  }
  assert.ok(brake.isPaused(session), `${session} is paused`);
}

test('past the cap, a pause resumes the session paused longest ago, also after a restart', async () => {
  const dir = tempDataDir(dirs);
  let env = openStoreEnv(dir);
  const clock = { t: Date.UTC(2026, 10, 27, 12) };
  const published: [string, unknown][] = [];
  try {
    await env.commit(() => limitRepo(env).stageBrake({ enabled: true, repeats: 2, windowSeconds: 60 }));
    let brake = brakeOn(env, clock, published);
    const pausedSessions = () => brake.paused().map((p) => p.session);
    // Reopens the store as a restart does. (LMDB runs transactions in order: an empty one settles after the
    // pauses' writes.)
    const reopen = async () => {
      await env.commit(() => undefined);
      await env.close();
      env = openStoreEnv(dir);
    };
    // Paused in this order; their names sort the other way.
    loop(brake, clock, 'zed');
    loop(brake, clock, 'amy');
    assert.deepEqual(published, [
      ['session.paused', brake.isPaused('zed')],
      ['session.paused', brake.isPaused('amy')],
    ]);
    loop(brake, clock, 'abe');
    assert.equal(brake.isPaused('zed'), null, 'the oldest pause is forgotten');
    assert.deepEqual(published[2], ['session.resumed', { session: 'zed' }]);
    assert.deepEqual(pausedSessions(), ['amy', 'abe']);

    // A restart reads what was stored, oldest pause first: `amy` goes next, though `abe` sorts before it.
    await reopen();
    brake = brakeOn(env, clock, published);
    assert.deepEqual(pausedSessions(), ['amy', 'abe']);
    loop(brake, clock, 'bob');
    assert.deepEqual(pausedSessions(), ['abe', 'bob']);
    await reopen();
    assert.deepEqual(
      limitRepo(env)
        .paused()
        .map((p) => p.session)
        .sort(),
      ['abe', 'bob'],
    );
  } finally {
    await env.close();
  }
});

test('with repeats 3, the third call of one tool call within the window is refused (docs/api.md, Limits)', async () => {
  const env = openStoreEnv(tempDataDir(dirs));
  const clock = { t: Date.UTC(2026, 10, 27, 12) };
  try {
    await env.commit(() => limitRepo(env).stageBrake({ enabled: true, repeats: 3, windowSeconds: 60 }));
    const brake = brakeOn(env, clock, []);
    const at = (session: string, seconds: number, signature = 'sig') => {
      clock.t = Date.UTC(2026, 10, 27, 12) + seconds * 1000;
      return brake.observe(session, signature, 'read_file');
    };
    // Another tool call in between does not reset the count.
    assert.deepEqual([at('a', 0), at('a', 1, 'other'), at('a', 2), at('a', 3)], [false, false, false, true]);
    assert.equal(brake.isPaused('a')?.repeats, 3);
    // A call exactly windowSeconds older no longer counts; one less than that does.
    assert.deepEqual([at('b', 0), at('b', 30), at('b', 60), at('b', 61)], [false, false, false, true]);
  } finally {
    // After the pauses' writes, which LMDB runs in order.
    await env.commit(() => undefined);
    await env.close();
  }
});
