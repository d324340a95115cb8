import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import {
  createAdmission,
  DEFAULT_MAX_OUTPUT,
  sessionKeyOf,
  type CallFacts,
  type Reservation,
} from '../../../edge/gateway/admission.ts';
import type { LimitRecord } from '../../../protocol/http/limits.ts';
import { UNDER_WAY_MS } from '../../../protocol/limit-windows.ts';
import { createLedger, createLedgerBuffer } from '../../../state/limit-ledger.ts';
import type { ActiveLimit } from '../../../protocol/ports/limits.ts';
import { ServiceError } from '../../../protocol/errors.ts';
import { lastToolCall } from '../../../edge/gateway/tool-repeat.ts';

const limit = (scope: LimitRecord['scope'], metric: LimitRecord['metric'], max: number): ActiveLimit => ({
  record: {
    id: `lim_${scope.kind}_${metric}`,
    name: `${scope.kind} ${metric}`,
    enabled: true,
    scope,
    window: 'minute',
    metric,
    max,
    gauge: null,
    createdAt: '',
    updatedAt: '',
  },
  max: metric === 'usd' ? BigInt(max * 1e9) : BigInt(max),
});

/** The need reserved under each limit, in order. */
const needs = (r: Reservation) => Array.from({ length: r.count }, (_, i) => r.held[i * 4 + 2]);

const facts = (over: Partial<CallFacts> = {}): CallFacts => ({
  principal: { tokenId: 'tok_a', scopes: ['inference'], serviceAccountId: null },
  headers: {},
  packSlug: null,
  metered: true,
  bodyBytes: 300,
  maxOutput: 50,
  priced: null,
  ...over,
});

function admission(limits: ActiveLimit[], gauge: { percent: number; resetsAt: number | null } | null = null) {
  const trips: string[] = [];
  const a = createAdmission({
    active: () => limits,
    ledger: createLedger(createLedgerBuffer(64)),
    now: () => 30_000,
    gaugeShare: () => gauge,
    tripped: (record, key) => trips.push(`${record.id}|${key}`),
  });
  return { a, trips };
}

describe('admission', () => {
  test('sessions: Claude Code, then Codex, then x-session-id; bounded and reduced to safe characters', () => {
    assert.equal(sessionKeyOf({ session_id: 'codex-1', 'x-claude-code-session-id': 'cc-1' }), 'cc-1');
    assert.equal(sessionKeyOf({ session_id: ' codex-1 ' }), 'codex-1');
    // Codex CLI 0.171 spells it with a hyphen (recorded: test/fixtures/translate/codex/ws-upgrade.json).
    assert.equal(sessionKeyOf({ 'session-id': 'codex-2', session_id: 'codex-1' }), 'codex-2');
    assert.equal(sessionKeyOf({ 'x-session-id': 'a b/c\nd' }), 'a_b_c_d');
    assert.equal(sessionKeyOf({ 'x-session-id': 'x'.repeat(500) })!.length, 128);
    assert.equal(sessionKeyOf({ 'x-session-id': '   ' }), null);
  });

  test('no limit: nothing reserved; a limit outside the scope: nothing either', () => {
    assert.equal(admission([]).a.admit(facts()), null);
    assert.equal(admission([limit({ kind: 'token', id: 'tok_b' }, 'requests', 1)]).a.admit(facts()), null);
    assert.equal(admission([limit({ kind: 'session', id: null }, 'requests', 1)]).a.admit(facts()), null);
  });

  test('a credential limit counts the calls made with that key only', () => {
    const { a } = admission([limit({ kind: 'credential', id: 'key_a' }, 'requests', 1)]);
    assert.equal(a.admit(facts()), null, 'a call that names no key is outside it');
    assert.equal(a.admit(facts({ credentialId: 'key_b' })), null);
    assert.equal(a.admit(facts({ credentialId: 'key_a' }))!.count, 1);
    assert.throws(() => a.admit(facts({ credentialId: 'key_a' })), /reached/);
  });

  test('worst case: bytes over 3 plus the output bound (or the default); unmetered calls count requests only', () => {
    const { a } = admission([limit({ kind: 'service', id: null }, 'total_tokens', 1_000_000)]);
    assert.deepEqual(needs(a.admit(facts())!), [150n]);
    assert.deepEqual(needs(a.admit(facts({ maxOutput: null }))!), [BigInt(100 + DEFAULT_MAX_OUTPUT)]);
    assert.deepEqual(needs(a.admit(facts({ metered: false }))!), [0n]);
  });

  test('a refusal names the limit, says when it resets, gives back what it reserved under the others', () => {
    const perSession = limit({ kind: 'session', id: null }, 'requests', 1);
    const tokens = limit({ kind: 'token', id: 'tok_a' }, 'total_tokens', 1000);
    const { a, trips } = admission([tokens, perSession]);
    const session = { headers: { 'x-session-id': 's1' } };
    const first = a.admit(facts(session))!;
    assert.equal(first.count, 2);
    assert.throws(
      () => a.admit(facts(session)),
      (err: unknown) =>
        err instanceof ServiceError &&
        err.code === 'LIMIT_EXCEEDED' &&
        err.headers['retry-after'] === '30' &&
        err.details.resetsAt === '1970-01-01T00:01:00.000Z' &&
        err.details.limitId === perSession.record.id,
    );
    assert.deepEqual(trips, [`${perSession.record.id}|s1`]);
    // Another session has its own counter; the token limit holds two reservations of 150, not three.
    const other = a.admit(facts({ headers: { 'x-session-id': 's2' } }))!;
    a.settle(first, { inputTokens: 20, outputTokens: 30, totalTokens: 50 } as never);
    a.release(other);
    const again = a.admit(facts({ headers: { 'x-session-id': 's3' }, maxOutput: 850 }))!;
    assert.deepEqual(needs(again), [950n, 1n], '50 used + 950 fits 1000 exactly');
  });
});

describe('an output bound for bodies that name none', () => {
  test('the default when it fits; less when only less fits (at least 256); the bound goes with the reservation', () => {
    const { a } = admission([limit({ kind: 'service', id: null }, 'total_tokens', 1000)]);
    const open = facts({ maxOutput: null, cappable: true });
    const first = a.admit(open)!;
    assert.deepEqual([first.outputCap, needs(first)], [900, [1000n]], '100 input tokens beside 900 output');
    assert.throws(() => a.admit(open), /reached/, 'nothing left while the first is in flight');
    a.settle(first, { inputTokens: 100, outputTokens: 500, totalTokens: 600 } as never);
    assert.equal(a.admit(open)!.outputCap, 300);
    const big = admission([limit({ kind: 'service', id: null }, 'total_tokens', 100_000)]).a;
    assert.equal(big.admit(open)!.outputCap, DEFAULT_MAX_OUTPUT, 'room for the default: the default is sent');
    assert.equal(big.admit(facts({ maxOutput: null }))!.outputCap, null, 'not cappable: nothing is sent');
    assert.equal(big.admit(facts({ cappable: true }))!.outputCap, null, 'the body names its own');
  });
});

describe('a Gauge window gate', () => {
  const gate = (max: number): ActiveLimit => {
    const l = limit({ kind: 'session', id: null }, 'gauge_percent', max);
    return { ...l, record: { ...l.record, window: 'gauge', gauge: { accountId: 'claude', windowId: 'five_hour' } } };
  };
  const session = facts({ headers: { 'x-claude-code-session-id': 's' } });

  test('refuses the calls in its scope once the reading reaches the share, until the window resets', () => {
    const { a, trips } = admission([gate(90)], { percent: 91.5, resetsAt: 90_000 });
    assert.throws(
      () => a.admit(session),
      (err: unknown) =>
        err instanceof ServiceError &&
        err.code === 'LIMIT_EXCEEDED' &&
        err.headers['retry-after'] === '60' &&
        /five_hour/.test(err.message),
    );
    assert.equal(trips.length, 1);
    assert.equal(a.admit(facts()), null, 'a call without a session is outside a session gate');
  });

  test('below the share, or with no reading, the gate reserves nothing and admits', () => {
    assert.equal(admission([gate(90)], { percent: 89.9, resetsAt: null }).a.admit(session), null);
    assert.equal(admission([gate(90)], null).a.admit(session), null);
  });
});

describe('a Gauge window gate that stops new sessions', () => {
  const gate = (max: number): ActiveLimit => {
    const l = limit({ kind: 'service', id: null }, 'gauge_percent', max);
    const gauge = { accountId: 'claude', windowId: 'five_hour', stops: 'new_sessions' as const };
    return { ...l, record: { ...l.record, window: 'gauge', gauge } };
  };
  const of = (id: string) => facts({ headers: { 'x-claude-code-session-id': id } });
  const refused = (err: unknown) =>
    err instanceof ServiceError && err.code === 'LIMIT_EXCEEDED' && /not of a session under way/.test(err.message);

  test('a session it admitted while open goes on once it shuts; a new one, or a call of none, is refused', () => {
    const reading = { percent: 50, resetsAt: 90_000 };
    let clock = 30_000;
    const limits = [gate(90)];
    const buffer = createLedgerBuffer(64);
    /** An edge thread's admission: its own ledger view (and memo) of the one shared table. */
    const thread = () =>
      createAdmission({
        active: () => limits,
        ledger: createLedger(buffer),
        now: () => clock,
        gaugeShare: () => reading,
        tripped: () => undefined,
      });
    const a = thread();
    assert.equal(a.admit(of('old')), null);
    reading.percent = 95;
    assert.equal(a.admit(of('old')), null, 'under way');
    assert.throws(() => a.admit(of('new')), refused);
    assert.throws(() => a.admit(facts()), refused, 'no session: nothing says it is under way');
    // What marks a session is in the shared ledger: another thread's admission agrees.
    const other = thread();
    assert.equal(other.admit(of('old')), null);
    assert.throws(() => other.admit(of('new')), refused);
    // A session with no call admitted for UNDER_WAY_MS is over: then it is a new one.
    clock += UNDER_WAY_MS - 3_600_000;
    assert.equal(a.admit(of('old')), null, 'still under way');
    clock += 3_600_000;
    assert.throws(() => a.admit(of('old')), refused);
    // A refused session is not marked: it waits until the gate opens, and is then admitted (and marked).
    reading.percent = 10;
    assert.equal(a.admit(of('new')), null);
    reading.percent = 95;
    assert.equal(a.admit(of('new')), null);
  });
});

describe('the last tool call (loop brake)', () => {
  const chat = (args: string) => ({
    messages: [
      { role: 'user', content: 'q' },
      { role: 'assistant', tool_calls: [{ type: 'function', function: { name: 'grep', arguments: args } }] },
      { role: 'tool', content: 'r' },
    ],
  });
  test('chat: the last assistant message tool calls; same name and arguments, same signature', () => {
    const a = lastToolCall('chat.completions', chat('{"q":1}'))!;
    assert.equal(a.tool, 'grep');
    assert.equal(lastToolCall('chat.completions', chat('{"q":1}'))!.signature, a.signature);
    assert.notEqual(lastToolCall('chat.completions', chat('{"q":2}'))!.signature, a.signature);
    assert.equal(lastToolCall('chat.completions', { messages: [{ role: 'user', content: 'q' }] }), null);
    assert.equal(lastToolCall('embeddings', chat('{"q":1}')), null, 'other operations carry no tool calls');
  });

  test('messages: tool_use blocks; responses: the function_call items after the last message', () => {
    const messages = {
      messages: [
        { role: 'assistant', content: [{ type: 'text' }, { type: 'tool_use', name: 'bash', input: { c: 'ls' } }] },
      ],
    };
    assert.equal(lastToolCall('messages', messages)!.tool, 'bash');
    const responses = {
      input: [
        { type: 'function_call', name: 'old', arguments: '{}' },
        { type: 'message', role: 'user', content: 'go' },
        { type: 'function_call', name: 'edit', arguments: '{"f":1}' },
        { type: 'function_call_output', output: 'ok' },
      ],
    };
    assert.equal(lastToolCall('responses.create', responses)!.tool, 'edit');
    assert.equal(lastToolCall('responses.create', { input: 'text' }), null);
  });

  test('odd bodies are no tool call, never a throw; names are bounded to safe characters', () => {
    for (const body of [{}, { messages: 'x' }, { messages: [null, 1, { role: 'assistant', tool_calls: 'x' }] }])
      assert.equal(lastToolCall('chat.completions', body as never), null);
    const long = lastToolCall('chat.completions', chat('{}'.repeat(10)))!;
    assert.match(long.signature, /^[0-9a-f]{16}$/);
    const named = {
      messages: [{ role: 'assistant', tool_calls: [{ function: { name: 'a b\n'.repeat(40), arguments: '' } }] }],
    };
    assert.match(lastToolCall('chat.completions', named)!.tool, /^[A-Za-z0-9._:,_-]{1,64}$/);
  });
});

describe('settlement', () => {
  const pricing = (inputPerMTok: number, outputPerMTok: number) => ({
    inputPerMTok,
    outputPerMTok,
    cachedInputPerMTok: null,
    cacheWritePerMTok: null,
    cacheWrite1hPerMTok: null,
    currency: 'USD',
  });

  test("a pack reserves its dearest route's worst case, settles at the answering model's price (W4.6 item 2)", () => {
    const prices: Record<string, ReturnType<typeof pricing>> = { a: pricing(1, 50), b: pricing(100, 1) };
    const journaled: string[] = [];
    const a = createAdmission(
      {
        active: () => [limit({ kind: 'service', id: null }, 'usd', 10)],
        ledger: createLedger(createLedgerBuffer(64)),
        now: () => 30_000,
        gaugeShare: () => null,
        tripped: () => undefined,
        settled: (_slot, _start, used) => journaled.push(`settled ${used}`),
        journal: () => journaled.push('journal'),
      },
      (id) => prices[id] ?? null,
    );
    // 300 bytes (100 input tokens) and 50 output: route a's worst case is $0.0026, route b's $0.01005.
    const r = a.admit(facts({ priced: () => [prices.a!, prices.b!] }))!;
    assert.deepEqual(needs(r), [10_050_000n]);
    const usage = {
      inputTokens: 100,
      outputTokens: 50,
      cachedInputTokens: null,
      reasoningTokens: null,
      totalTokens: 150,
      costUsd: null,
      toolCalls: {},
    };
    a.settle(r, usage, 'a');
    // Priced as route a, which answered: $0.0001 + $0.0025; then the journal is written in the same stretch.
    assert.deepEqual(journaled, ['settled 2600000', 'journal']);
  });
});
