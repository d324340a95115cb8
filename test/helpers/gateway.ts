import assert from 'node:assert/strict';
import type { UsageReport } from '../../protocol/gateway.ts';
import type { RecordedRequest } from '../fakes/http.ts';
import type { FakeUsage } from '../fakes/script.ts';
import type { ServiceHandle } from './service.ts';

// What the gateway acceptance tests share: the request ID of each SDK call, the usage log line it
// produced, the usage a fake's numbers must become, and the end-of-suite leak checks.

/** Put into every prompt: it reaches the fakes and must never reach the service's log. */
export const PROMPT_SENTINEL = `prompt-sentinel-${process.pid}-never-logged`;
/** Put into every answer the fakes give, for the same check on the way back. */
export const ANSWER_SENTINEL = `answer-sentinel-${process.pid}-never-logged`;

export interface UsageLine {
  reqId: string;
  op: string;
  providerId: string;
  modelId: string | null;
  outcome: 'ok' | 'failed' | 'aborted';
  usage: UsageReport | null;
}

/**
 * A fetch for the SDK clients that records every answer's `x-service-request-id`, in order. Tests in a
 * file run one after another and the clients are built with `maxRetries: 0`, so `call` can tell which ID
 * belongs to which SDK call.
 */
export function requestIds() {
  const ids: string[] = [];
  const sent: Headers[] = [];
  const recording = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const res = await fetch(input, init);
    // The openai SDK probes FormData support with a `data:` URL once; that is no exchange with the service.
    const url = input instanceof Request ? input.url : String(input);
    if (url.startsWith('data:')) return res;
    ids.push(res.headers.get('x-service-request-id') ?? '(none)');
    sent.push(new Headers(init?.headers ?? (input instanceof Request ? input.headers : undefined)));
    return res;
  };
  return {
    fetch: recording,
    /** The headers the client sent with its most recent call. */
    lastSent: (): Headers => sent.at(-1) ?? new Headers(),
    /** Runs one SDK call to its end (streams consumed inside `run`) and returns its result and request ID. */
    async call<T>(run: () => Promise<T>): Promise<{ result: T; reqId: string }> {
      const before = ids.length;
      const result = await run();
      assert.equal(ids.length, before + 1, 'exactly one HTTP exchange');
      const reqId = ids[before]!;
      assert.match(reqId, /^req_[0-9A-HJKMNP-TV-Z]{26}$/);
      return { result, reqId };
    },
  };
}

/** The one usage line of a request (written asynchronously, once the call is over). */
export async function usageLine(svc: ServiceHandle, reqId: string): Promise<UsageLine> {
  const isIt = (l: Record<string, unknown>) => l.msg === 'usage' && l.reqId === reqId;
  const line = await svc.waitForLog(isIt);
  assert.equal(svc.logLines().filter(isIt).length, 1, 'one usage line per call');
  const { op, providerId, modelId, outcome, usage } = line as unknown as UsageLine;
  return { reqId, op, providerId, modelId, outcome, usage };
}

/** Asserts the whole usage line: what was called, how it ended, and the usage it reported. */
export async function assertUsage(
  svc: ServiceHandle,
  reqId: string,
  want: Omit<UsageLine, 'reqId' | 'outcome'> & { outcome?: UsageLine['outcome'] },
): Promise<void> {
  assert.deepEqual(await usageLine(svc, reqId), { reqId, outcome: 'ok', ...want });
}

export type ToolCounts = Record<string, number>;

/** Numbers no other call of the suite reports, so a usage line cannot match by coincidence. */
export function distinctUsage(seed: number): FakeUsage {
  return {
    inputTokens: 100 + seed * 7,
    outputTokens: 20 + seed * 3,
    cachedTokens: 10 + seed,
    reasoningTokens: 2 + seed,
    cacheCreationTokens: 5 + seed,
    costUsd: (seed + 1) / 4096,
  };
}

/** Chat Completions, Responses and gpt-image usage: the `prompt_tokens` / `input_tokens` families. */
export function styleAUsage(
  u: FakeUsage,
  options: { toolCalls?: ToolCounts; details?: boolean; cost?: boolean } = {},
): UsageReport {
  const { toolCalls = {}, details = true, cost = false } = options;
  return {
    inputTokens: u.inputTokens,
    outputTokens: u.outputTokens,
    cachedInputTokens: details ? u.cachedTokens : null,
    reasoningTokens: details ? u.reasoningTokens : null,
    totalTokens: u.inputTokens + u.outputTokens,
    costUsd: cost ? u.costUsd : null,
    toolCalls,
  };
}

/** Embeddings report `prompt_tokens` and `total_tokens` only. */
export function embeddingsUsage(u: FakeUsage): UsageReport {
  return { ...NOTHING_REPORTED, inputTokens: u.inputTokens, totalTokens: u.inputTokens };
}

/**
 * styleB Messages. Anthropic splits the prompt into `input_tokens` (after the last cache breakpoint),
 * `cache_creation_input_tokens` and `cache_read_input_tokens`; the meter's inputTokens is their sum (the
 * whole prompt, as styleA's prompt_tokens is) and cachedInputTokens is the cache read. Servers that report
 * no cache counters (llama-server, Ollama) give input_tokens alone and no cached figure.
 */
export function messagesUsage(u: FakeUsage, options: { toolCalls?: ToolCounts; cacheCounters: boolean }): UsageReport {
  const input = options.cacheCounters ? u.inputTokens + u.cacheCreationTokens + u.cachedTokens : u.inputTokens;
  return {
    inputTokens: input,
    outputTokens: u.outputTokens,
    cachedInputTokens: options.cacheCounters ? u.cachedTokens : null,
    ...(options.cacheCounters && {
      cacheWriteTokens: u.cacheCreationTokens,
      cacheWrite1hTokens: u.cacheCreation1hTokens ?? 0,
    }),
    reasoningTokens: null,
    totalTokens: input + u.outputTokens,
    costUsd: null,
    toolCalls: options.toolCalls ?? {},
  };
}

/** Counted, not metered (speech, transcription, image edits, rerank, count_tokens, calls by response ID). */
export const NOTHING_REPORTED: UsageReport = Object.freeze({
  inputTokens: null,
  outputTokens: null,
  cachedInputTokens: null,
  reasoningTokens: null,
  totalTokens: null,
  costUsd: null,
  toolCalls: {},
}) as UsageReport;

/** Every byte of a recorded request a token could hide in: URL, raw headers, body, multipart fields. */
function requestText(r: RecordedRequest): string {
  const parts = (r.parts ?? []).map((p) => `${p.name}\n${p.filename ?? ''}\n${p.contentType ?? ''}\n${p.value ?? ''}`);
  return [r.url, ...r.rawHeaders, r.body, ...parts].join('\n');
}

/** No upstream request carried the service's local token, anywhere. */
export function assertTokenNeverUpstream(token: string, requests: readonly RecordedRequest[]): void {
  assert.ok(token.length > 20, 'the local token is known');
  assert.ok(requests.length > 0, 'the fake was called');
  for (const r of requests)
    assert.equal(requestText(r).includes(token), false, `${r.method} ${r.path} carried the local token`);
}

/** Prompts and answers reached the fakes, yet neither appears anywhere in the service's log. */
export function assertContentNeverLogged(svc: ServiceHandle, requests: readonly RecordedRequest[]): void {
  assert.ok(
    requests.some((r) => requestText(r).includes(PROMPT_SENTINEL)),
    'the sentinel was in a prompt the fakes received',
  );
  const usageLines = svc.logLines().filter((l) => l.msg === 'usage');
  assert.ok(usageLines.length > 0);
  for (const sentinel of [PROMPT_SENTINEL, ANSWER_SENTINEL]) {
    assert.equal(
      usageLines.some((l) => JSON.stringify(l).includes(sentinel)),
      false,
    );
    assert.equal(svc.log().includes(sentinel), false);
    assert.equal(svc.stderr().includes(sentinel), false);
  }
}

/** Creates a provider and refreshes its models; returns how many the provider reported. */
export async function addProvider(
  svc: ServiceHandle,
  body: { id?: string; kind: string; baseUrl: string; credential?: string },
): Promise<number> {
  const created = await svc.request('POST', '/v1/providers', { body });
  assert.equal(created.status, 201, created.text);
  const id = created.json.id as string;
  const refreshed = await svc.request('POST', `/v1/providers/${id}/actions/refresh-models`);
  assert.equal(refreshed.status, 200, refreshed.text);
  return refreshed.json.modelCount as number;
}
