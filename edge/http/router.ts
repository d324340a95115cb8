import type { Static, TSchema } from '@sinclair/typebox';
import type { TypeCheck } from '@sinclair/typebox/compiler';
import type { Scope } from '../../protocol/scopes.ts';
import type { BodyStream, EdgeRequest, EdgeRequestHead, Principal, ResponseWriter } from './types.ts';

export type HttpMethod = 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
/** What a 405's `Allow` lists: the routes' methods, and HEAD beside GET. */
export type AllowedMethod = HttpMethod | 'HEAD';

export interface RouteContext<B> {
  req: EdgeRequest;
  requestId: string;
  /** Null only on public routes. */
  principal: Principal | null;
  params: Readonly<Record<string, string>>;
  body: B;
  /** The request body as it arrives, for routes whose raw body is `stream`. */
  bodyStream: BodyStream | null;
  /** Runs `callback` if the client disconnects before the answer is complete. */
  onAbort(callback: () => void): void;
}

export interface RouteResult {
  status?: number;
  body?: unknown;
  headers?: Record<string, string>;
  /**
   * A body already serialized (a relayed whole answer): sent as is, with `headers` as they are (the edge
   * adds its own to that object) instead of the JSON content type.
   */
  raw?: string | Uint8Array;
  /** A streamed answer: called with a writer once the route returns. */
  stream?: (out: ResponseWriter) => void;
}

/**
 * How a route without a typed body receives it: whole (up to the JSON limit), whole and possibly in a slot
 * of the body arena (valid until the handler settles unless handed to a relay worker), or as a stream.
 */
export type RawBodyMode = 'buffer' | 'shared' | 'stream';

export interface RouteDef {
  method: HttpMethod;
  path: string;
  /**
   * `public` routes need no token (only /health, /version, pairing creation and the dashboard's static files); a list
   * means any of them.
   */
  scope: Scope | readonly Scope[] | 'public';
  /** Present when the route takes a required, typed JSON body. */
  body?: TypeCheck<TSchema>;
  /** For routes that read their body themselves (the gateway): how, decided per request. */
  rawBody?: (head: EdgeRequestHead) => RawBodyMode;
  handle(ctx: RouteContext<unknown>): Promise<RouteResult> | RouteResult;
}

/** Keeps each handler's body typed by its schema while the table stays one homogeneous list. */
export function route<S extends TSchema>(
  def: Omit<RouteDef, 'body' | 'handle'> & {
    body: TypeCheck<S>;
    handle(ctx: RouteContext<Static<S>>): Promise<RouteResult> | RouteResult;
  },
): RouteDef;
export function route(
  def: Omit<RouteDef, 'body' | 'handle'> & { handle(ctx: RouteContext<null>): Promise<RouteResult> | RouteResult },
): RouteDef;
export function route(def: RouteDef): RouteDef {
  return def;
}

export type Match =
  | { kind: 'found'; route: RouteDef; params: Record<string, string> }
  | { kind: 'method'; allow: AllowedMethod[] }
  | { kind: 'none' };

interface Compiled {
  segments: string[];
  byMethod: Map<HttpMethod, RouteDef>;
}

/** Static paths hit a map; parameterised ones (`/v1/tokens/:id`) are compared segment by segment. */
export function createRouter(routes: readonly RouteDef[]) {
  const statics = new Map<string, Compiled>();
  const dynamics: Compiled[] = [];
  for (const r of routes) {
    const segments = r.path.split('/').slice(1);
    const dynamic = segments.some((s) => s.startsWith(':'));
    // One entry per path shape, so a wrong method on any shape is a 405 listing every method it has.
    const shape = (segs: string[]) => segs.map((seg) => (seg.startsWith(':') ? ':' : seg)).join('/');
    let entry = dynamic ? dynamics.find((d) => shape(d.segments) === shape(segments)) : statics.get(r.path);
    if (entry && entry.segments.join('/') !== segments.join('/')) {
      throw new Error(`routes of one shape must name their parameters alike: ${r.path}`);
    }
    if (!entry) {
      entry = { segments, byMethod: new Map() };
      if (dynamic) dynamics.push(entry);
      else statics.set(r.path, entry);
    }
    if (entry.byMethod.has(r.method)) throw new Error(`duplicate route ${r.method} ${r.path}`);
    entry.byMethod.set(r.method, r);
  }

  // HEAD is answered wherever GET is (RFC 9110 9.3.2): the GET's status and headers, no body (app.ts).
  // Claude Code sends `HEAD /` to its base URL at every start.
  function resolve(entry: Compiled, method: string, params: Record<string, string>): Match {
    const found = entry.byMethod.get((method === 'HEAD' ? 'GET' : method) as HttpMethod);
    if (found) return { kind: 'found', route: found, params };
    const allow: AllowedMethod[] = [...entry.byMethod.keys()];
    if (entry.byMethod.has('GET')) allow.splice(allow.indexOf('GET') + 1, 0, 'HEAD');
    return { kind: 'method', allow };
  }

  return {
    /** Throws URIError for a malformed percent-encoding in a path parameter. */
    match(method: string, path: string): Match {
      const exact = statics.get(path);
      if (exact) return resolve(exact, method, {});
      const parts = path.split('/').slice(1);
      for (const d of dynamics) {
        if (d.segments.length !== parts.length) continue;
        const params: Record<string, string> = {};
        let ok = true;
        for (let i = 0; i < parts.length && ok; i++) {
          const seg = d.segments[i]!;
          const part = parts[i]!;
          if (seg.startsWith(':')) {
            if (part === '') ok = false;
            else params[seg.slice(1)] = decodeURIComponent(part);
          } else ok = seg === part;
        }
        if (ok) return resolve(d, method, params);
      }
      return { kind: 'none' };
    },
  };
}
