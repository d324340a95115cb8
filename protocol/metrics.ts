// The metrics endpoint's media type and how the edge reports each answer to the traffic metrics
// (metrics/ keeps the registry).

export const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export interface RequestObserver {
  /**
   * An answer went out (for a stream: it ended). `route` is the app's route name: `METHOD /pattern`, `unmatched` or
   * `preflight`.
   */
  answered(route: string, method: string, status: number, durationMs: number): void;
  /** The answer was an error envelope with this code. */
  failed(route: string, code: string): void;
}
