import type { GaugeFailureCode } from '../../protocol/gauge.ts';
import { redactText } from '../../protocol/gauge-redact.ts';
import { CollectorError, type CollectContext, type CollectResult, type Collector } from './collectors/types.ts';

// One collection under a time limit. When the limit passes the collector's signal is aborted and the run
// settles at once as `timeout`, whether or not the collector honours the signal: a hung source holds its
// pool slot for no longer than its limit. Whatever the collector throws becomes a code and a redacted message.

export type RunResult =
  | { ok: true; result: CollectResult }
  | { ok: false; code: GaugeFailureCode; message: string; retryAfterMs: number | null };

const GENERIC: Record<GaugeFailureCode, string> = {
  auth_failed: 'The provider refused the stored credential.',
  rate_limited: 'The provider asked us to slow down.',
  upstream_error: 'The provider answered with an error.',
  malformed: 'The provider answered with something unreadable.',
  timeout: 'The source did not answer within its time limit.',
  unreachable: 'The source could not be reached.',
  not_configured: 'The source is not configured.',
  read_failed: 'The source could not be read.',
};

export function failureOf(err: unknown): Extract<RunResult, { ok: false }> {
  if (err instanceof CollectorError) {
    const retry = err.retryAfterMs;
    return {
      ok: false,
      code: err.code,
      // A collector's message is meant to be safe; it is still bounded and scrubbed of keys and emails.
      message: err.message ? redactText(err.message, 300) : GENERIC[err.code],
      retryAfterMs: typeof retry === 'number' && Number.isFinite(retry) && retry > 0 ? retry : null,
    };
  }
  // Anything else is a collector bug or a runtime error whose text may carry a path or a body: code only.
  return { ok: false, code: 'upstream_error', message: 'The collector failed unexpectedly.', retryAfterMs: null };
}

export async function runWithin(
  collector: Collector,
  ctx: Omit<CollectContext, 'signal'>,
  timeoutMs: number,
  stop: AbortSignal,
): Promise<RunResult> {
  const controller = new AbortController();
  const onStop = () => controller.abort(new CollectorError('timeout', 'The service is stopping.'));
  stop.addEventListener('abort', onStop, { once: true });
  let timer: NodeJS.Timeout | undefined;
  const limit = new Promise<RunResult>((resolve) => {
    timer = setTimeout(() => {
      controller.abort(new CollectorError('timeout', GENERIC.timeout));
      resolve({ ok: false, code: 'timeout', message: GENERIC.timeout, retryAfterMs: null });
    }, timeoutMs);
  });
  const run = (async (): Promise<RunResult> => {
    try {
      return { ok: true, result: await collector.collect({ ...ctx, signal: controller.signal }) };
    } catch (err) {
      return failureOf(err);
    }
  })();
  try {
    return await Promise.race([run, limit]);
  } finally {
    clearTimeout(timer);
    stop.removeEventListener('abort', onStop);
  }
}
