import type { Reply } from '../http.ts';

// Anthropic's error envelope: `{type: "error", error: {type, message}, request_id}`, the id echoed in the
// `request-id` header.

let sequence = 0;

export function anthropicError(status: number, type: string, message: string): Reply {
  const requestId = `req_fake${String(++sequence).padStart(8, '0')}`;
  return {
    status,
    body: { type: 'error', error: { type, message }, request_id: requestId },
    headers: { 'request-id': requestId },
  };
}
