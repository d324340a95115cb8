import type { WireError } from './errors.ts';
import type { Principal } from './principal.ts';
import type { Scope } from './scopes.ts';

// A request an edge thread hands to the control thread whole (docs/api.md, "Edge threads"): a management
// route, a stream the control plane feeds (/v1/events, pairing, job watches, log follow), or a gateway call the
// edge thread cannot serve from its own copies (enforced limits on, the embedded runtime's unlisted files).
// The edge thread has already checked the Host, the token and the scope against its copies; the control
// thread runs the route itself (its body check, its handler) and answers with what the route returned, which
// the edge thread writes with its own headers, log line and metrics. All of it crosses as structured clones.

/** What an edge thread knows of a route it forwards: enough to route, authenticate and read the body. */
export interface RouteShape {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  path: string;
  scope: Scope | readonly Scope[] | 'public';
  /** True when the route reads a body (typed, or raw and whole). */
  body: boolean;
}

export interface ForwardedRequest {
  method: string;
  path: string;
  query: string;
  headers: Record<string, string>;
  /** The body's bytes (a copy the control thread owns), or null. */
  body: Uint8Array | null;
  peer?: string;
}

export type ToControl =
  | {
      t: 'call';
      id: number;
      /** `METHOD /pattern` of the route the edge thread matched. */
      route: string;
      req: ForwardedRequest;
      requestId: string;
      principal: Principal | null;
      params: Record<string, string>;
    }
  /** Bytes of a streamed answer the edge thread has written to its client (flow control). */
  | { t: 'credit'; id: number; bytes: number }
  /** The client left before the answer was complete. */
  | { t: 'gone'; id: number };

export type FromControl =
  /** The route's whole answer: `raw` bytes or text as they are, else `body` as JSON. */
  | {
      t: 'result';
      id: number;
      status?: number;
      headers?: Record<string, string>;
      body?: unknown;
      raw?: string | Uint8Array;
    }
  /** The route answered with a stream: head, data and end (or abort) messages follow under this id. */
  | { t: 'stream'; id: number }
  | { t: 'head'; id: number; status: number; headers: Record<string, string> }
  | { t: 'data'; id: number; chunk: string | Uint8Array }
  | { t: 'end'; id: number; chunk?: string | Uint8Array; failed?: boolean }
  | { t: 'abort'; id: number }
  /** The route threw: a ServiceError whole, anything else its name and message (the edge answers INTERNAL). */
  | ({ t: 'error'; id: number } & WireError);

/**
 * Stream bytes the control thread may have posted and the edge thread not yet written. Beyond it the route's
 * `write` answers false until the edge thread's credits bring the backlog under half.
 */
export const FORWARD_STREAM_WINDOW = 256 * 1024;
