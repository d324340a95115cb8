import { ServiceError, errorEnvelope } from '../../protocol/errors.ts';
import { newRequestId } from '../http/request-id.ts';
import type { EdgeResponse } from '../http/types.ts';

// The messages a Responses WebSocket sends besides a stream's events (docs/api.md, Responses over a WebSocket).

/** An error message as OpenAI's WebSocket mode sends one: the HTTP status beside the error object. */
export function errorFrame(status: number, error: Record<string, unknown>, lane: string, requestId?: string): string {
  return JSON.stringify({
    type: 'error',
    status,
    error,
    ...(requestId !== undefined && { request_id: requestId }),
    ...(lane !== '' && { stream_id: lane }),
  });
}

export function serviceErrorFrame(err: unknown, lane: string): string {
  const error =
    err instanceof ServiceError ? err : new ServiceError('INVALID_REQUEST', 'The message could not be read.');
  const requestId = newRequestId();
  return errorFrame(error.status, errorEnvelope(error, requestId).error as Record<string, unknown>, lane, requestId);
}

/** An answer that is not a stream (the route refused the call, or answered whole): one message. */
export function wholeAnswerFrame(answer: EdgeResponse, lane: string): string {
  const text = typeof answer.body === 'string' ? answer.body : Buffer.from(answer.body).toString('utf8');
  let parsed: unknown = null;
  try {
    parsed = JSON.parse(text);
  } catch {
    // Not JSON: said as an error below.
  }
  const requestId = answer.headers['x-request-id'];
  if (answer.status >= 400) {
    const error = (parsed as { error?: Record<string, unknown> } | null)?.error ?? { message: text.slice(0, 500) };
    return errorFrame(answer.status, error, lane, requestId);
  }
  return JSON.stringify({ type: 'response.completed', response: parsed, ...(lane !== '' && { stream_id: lane }) });
}
