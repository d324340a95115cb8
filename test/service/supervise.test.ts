import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { EventEmitter } from 'node:events';
import { describe, it, type TestContext } from 'node:test';
import { EXIT_CANNOT_START, supervise } from '../../service/supervise.ts';

// The supervisor's decisions over fake children and mocked timers: when it restarts, after how long, when
// it gives up, and what a stop signal does. test/integration/supervisor.test.ts runs the real processes.

class FakeChild extends EventEmitter {
  readonly signals: NodeJS.Signals[] = [];
  constructor(readonly pid: number) {
    super();
  }
  kill(signal: NodeJS.Signals): boolean {
    this.signals.push(signal);
    return true;
  }
  exit(code: number | null, signal: NodeJS.Signals | null = null): void {
    this.emit('exit', code, signal);
  }
}

function harness(t: TestContext) {
  t.mock.timers.enable({ apis: ['setTimeout'] });
  const children: FakeChild[] = [];
  const lines: { level: string; fields: Record<string, unknown>; msg: string }[] = [];
  const notices: string[] = [];
  let stop: ((signal: NodeJS.Signals) => void) | null = null;
  const record = (level: string) => (fields: object, msg: string) =>
    void lines.push({ level, fields: fields as Record<string, unknown>, msg });
  const done = supervise({
    spawnService: () => {
      const child = new FakeChild(1000 + children.length);
      children.push(child);
      return child as unknown as ChildProcess;
    },
    onStopSignal: (handler) => (stop = handler),
    log: { info: record('info'), warn: record('warn'), error: record('error') },
    say: (line) => void notices.push(line),
  });
  return {
    children,
    lines,
    notices,
    done,
    last: () => children.at(-1)!,
    stop: (signal: NodeJS.Signals) => stop!(signal),
    tick: (ms: number) => t.mock.timers.tick(ms),
    restartDelays: () => lines.filter((l) => l.msg.includes('restarting')).map((l) => l.fields.restartInMs),
  };
}

describe('supervise', () => {
  it('restarts a child that died, after a delay doubling from 0.5 s up to 30 s', (t) => {
    const h = harness(t);
    assert.equal(h.children.length, 1);
    assert.deepEqual(h.lines[0], {
      level: 'info',
      fields: { pid: 1000, supervisorPid: process.pid, restarts: 0 },
      msg: 'service process started',
    });
    const delays = [500, 1000, 2000, 4000, 8000, 16000, 30000, 30000];
    for (const [i, delay] of delays.entries()) {
      h.last().exit(null, 'SIGKILL');
      h.tick(delay - 1);
      assert.equal(h.children.length, i + 1, 'not before its delay');
      h.tick(1);
      assert.equal(h.children.length, i + 2);
    }
    assert.deepEqual(h.restartDelays(), delays);
    assert.match(h.notices[0]!, /stopped unexpectedly \(signal SIGKILL\); restarting it in 0\.5 s/);
    assert.equal(h.lines.at(-1)!.fields.pid, 1000 + delays.length, 'each start logs the new pid');
  });

  it('starts from 0.5 s again once a child has served for a minute', (t) => {
    const h = harness(t);
    h.last().exit(1);
    h.tick(500);
    h.last().exit(1);
    h.tick(1000);
    h.last().emit('message', { t: 'ready', port: 3939 });
    h.tick(60_000);
    h.last().exit(null, 'SIGSEGV');
    assert.deepEqual(h.restartDelays(), [500, 1000, 500]);
  });

  it('a child that dies before a minute of service keeps the delay growing', (t) => {
    const h = harness(t);
    h.last().exit(1);
    h.tick(500);
    h.last().emit('message', { t: 'ready', port: 3939 });
    h.tick(59_999);
    h.last().exit(1);
    assert.deepEqual(h.restartDelays(), [500, 1000]);
  });

  it('gives up on a child that cannot start, with its exit code and a notice', async (t) => {
    const h = harness(t);
    h.last().exit(EXIT_CANNOT_START);
    assert.equal(await h.done, EXIT_CANNOT_START);
    h.tick(60_000);
    assert.equal(h.children.length, 1, 'never restarted');
    assert.match(h.notices.join('\n'), /cannot start .*not restarting/);
  });

  it('passes SIGTERM on (and a second signal too), then exits with the child’s status', async (t) => {
    const h = harness(t);
    h.stop('SIGTERM');
    h.stop('SIGINT');
    assert.deepEqual(h.last().signals, ['SIGTERM', 'SIGINT']);
    h.last().exit(0);
    assert.equal(await h.done, 0);
    h.tick(60_000);
    assert.equal(h.children.length, 1, 'a stop is no crash');
  });

  it('a child killed by the forwarded signal gives 128 + its number', async (t) => {
    const h = harness(t);
    h.stop('SIGTERM');
    h.last().exit(null, 'SIGTERM');
    assert.equal(await h.done, 143);
  });

  it('a stop while waiting to restart exits 0 at once and starts nothing', async (t) => {
    const h = harness(t);
    h.last().exit(null, 'SIGKILL');
    h.stop('SIGINT');
    assert.equal(await h.done, 0);
    h.tick(30_000);
    assert.equal(h.children.length, 1);
  });

  it('a child that exits 0 without being asked was stopped on purpose: no restart', async (t) => {
    const h = harness(t);
    h.last().exit(0);
    assert.equal(await h.done, 0);
    assert.equal(h.children.length, 1);
  });
});
