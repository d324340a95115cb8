import { newId } from '../../protocol/ids.ts';

// Our own ID on every response; an inbound X-Request-Id is never trusted as ours.
export const newRequestId = (): string => newId('req_');

export const REQUEST_ID_HEADERS = ['x-service-request-id', 'x-request-id', 'request-id'] as const;

export function setRequestIdHeaders(headers: Record<string, string>, requestId: string): void {
  for (const name of REQUEST_ID_HEADERS) headers[name] = requestId;
}
