import type { TokenView } from './tokens.ts';

// The shapes of answers many routes share (docs/api.md), as their readers (the CLI) type them. Types only.

/** A list route's answer: its records under `data`. */
export interface ListAnswer<T> {
  data: T[];
}

/** A paged list: `hasMore` when more records matched than this answer carries. */
export interface PageAnswer<T> extends ListAnswer<T> {
  limit: number;
  offset: number;
  hasMore: boolean;
}

/** DELETE of a record named by its ID. */
export interface DeletedAnswer {
  id: string;
  deleted: true;
}

/** DELETE of a record named by its slug (presets, route packs). */
export interface DeletedSlugAnswer {
  slug: string;
  deleted: true;
}

/** POST /v1/tokens and a pairing's approval: the token, and its secret shown this once. */
export interface TokenCreated {
  token: TokenView;
  secret: string;
}

/** One line of GET /v1/logs: its number, and the log's JSON object (`{ msg }` for a line that is not JSON). */
export interface LogLine {
  seq: number;
  entry: Record<string, unknown>;
}

/** GET /v1/logs; `lost`: lines after `after` that are no longer kept. */
export interface LogPage extends ListAnswer<LogLine> {
  lastSeq: number;
  oldestSeq: number | null;
  hasMore: boolean;
  lost: number;
}
