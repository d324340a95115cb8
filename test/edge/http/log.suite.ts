import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, it } from 'node:test';
import { pino } from 'pino';
import { createAccessLogger } from '../../../edge/http/log.ts';
import type { UsageReport } from '../../../protocol/gateway.ts';

// The per-request lines are built by hand (edge/log.ts): each must be one valid JSON line in pino's shape,
// with exactly the fields docs/api.md names. The logger's batches are encoded into buffers: every line,
// long or not ASCII, must reach stdout whole and in order.

function capture(): { access: ReturnType<typeof createAccessLogger>; lines: () => Record<string, unknown>[] } {
  const raw: string[] = [];
  const log = pino(
    { level: 'info', base: { service: 'switchyard' } },
    { write: (line: string) => void raw.push(line) },
  );
  return {
    access: createAccessLogger(log),
    lines: () => raw.map((l) => (assert.ok(l.endsWith('\n')), JSON.parse(l) as Record<string, unknown>)),
  };
}

describe('access lines', () => {
  it('a request line, with and without an outcome', () => {
    const { access, lines } = capture();
    access.request('req_1', 'POST', 'POST /v1/chat/completions', 200, null, 1.25);
    access.request('req_2', 'GET', 'unmatched "odd" \u00e9', 499, 'client_aborted', 0);
    const [a, b] = lines();
    assert.equal(typeof a!.time, 'string');
    assert.deepEqual(
      { ...a, time: 0 },
      {
        level: 30,
        time: 0,
        service: 'switchyard',
        reqId: 'req_1',
        method: 'POST',
        route: 'POST /v1/chat/completions',
        status: 200,
        durationMs: 1.25,
        msg: 'request',
      },
    );
    assert.equal(b!.route, 'unmatched "odd" \u00e9');
    assert.equal(b!.outcome, 'client_aborted');
  });

  it('a usage line, its counts as JSON prints them, a route when there is one', () => {
    const { access, lines } = capture();
    const usage: UsageReport = {
      inputTokens: 12,
      outputTokens: 0,
      cachedInputTokens: null,
      reasoningTokens: null,
      totalTokens: 12,
      costUsd: 0.00012,
      toolCalls: { get_weather: 2 },
    };
    access.usage({ reqId: 'req_1', op: 'chat.completions', providerId: 'p', modelId: 'p/m', outcome: 'ok', usage });
    const route = { packSlug: 'fast', routeId: 'r1', fallback: true, fallbackReason: 'rate_limited' };
    access.usage({
      reqId: 'req_2',
      op: 'messages',
      providerId: 'p',
      modelId: null,
      outcome: 'aborted',
      usage: null,
      route,
    });
    // A report that breaks its type still gives a valid line.
    const broken = { ...usage, inputTokens: undefined, outputTokens: Number.NaN } as unknown as UsageReport;
    access.usage({
      reqId: 'req_3',
      op: 'embeddings',
      providerId: 'p',
      modelId: 'p/e',
      outcome: 'failed',
      usage: broken,
    });
    const [a, b, c] = lines();
    const { time: _t, ...rest } = a!;
    assert.deepEqual(rest, {
      level: 30,
      service: 'switchyard',
      reqId: 'req_1',
      op: 'chat.completions',
      providerId: 'p',
      modelId: 'p/m',
      outcome: 'ok',
      usage,
      msg: 'usage',
    });
    assert.deepEqual([b!.modelId, b!.usage, b!.route], [null, null, route]);
    assert.deepEqual([(c!.usage as UsageReport).inputTokens, (c!.usage as UsageReport).outputTokens], [null, null]);
  });

  it('writes nothing below its level', () => {
    const raw: string[] = [];
    const access = createAccessLogger(pino({ level: 'warn' }, { write: (l: string) => void raw.push(l) }));
    access.request('req_1', 'GET', 'GET /', 200, null, 1);
    assert.deepEqual(raw, []);
  });
});

describe('createLogger', () => {
  it('writes every line whole and in order: long ones past a batch, non-ASCII ones, and the last at exit', () => {
    const log = fileURLToPath(new URL('../../../edge/http/log.ts', import.meta.url));
    const script = `
      import { createLogger } from ${JSON.stringify(log)};
      const log = createLogger('info');
      for (let i = 0; i < 300; i++) {
        log.info({ i, note: i % 7 === 0 ? 'h\u00e9llo \u{1f600}' : 'x'.repeat(i % 5 === 0 ? 30000 : 10) }, 'line');
      }
      process.exit(0);`;
    const out = execFileSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      maxBuffer: 16 * 1024 * 1024,
    });
    const lines = out
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l) as { i: number; note: string });
    assert.deepEqual(
      lines.map((l) => l.i),
      Array.from({ length: 300 }, (_, i) => i),
    );
    assert.equal(lines[7]!.note, 'h\u00e9llo \u{1f600}');
    assert.equal(lines[5]!.note.length, 30000);
  });
});
