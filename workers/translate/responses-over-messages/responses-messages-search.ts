import { isRecord, str } from '../common.ts';
import { WEB_SEARCH_NAME } from '../responses-tools.ts';

// Anthropic's server web search as the Responses API's `web_search_call` items: a `server_tool_use` block
// named `web_search` is the call (its `input.query` the search), the `web_search_tool_result` block with
// its `tool_use_id` the outcome: the results' URLs as the action's `sources`, or `failed` for a
// `web_search_tool_result_error`. The results' encrypted content and the text's citations are not carried
// over (a web_search_call item has no place for them).

type Json = Record<string, unknown>;

/** Whether a block is the call of Anthropic's web search (other server tools are never offered). */
export const isSearchCall = (block: Json): boolean =>
  block.type === 'server_tool_use' && block.name === WEB_SEARCH_NAME;

/** The search a server_tool_use block ran, from its input (or the input JSON a stream delivered). */
export function searchQuery(input: unknown): string {
  let value = input;
  if (typeof input === 'string') {
    try {
      value = JSON.parse(input);
    } catch {
      return '';
    }
  }
  return isRecord(value) ? (str(value.query) ?? '') : '';
}

/** A web_search_call item before its outcome is known. */
export function searchItem(id: string, query: string | null, status: string): Json {
  return {
    type: 'web_search_call',
    id,
    status,
    action: query === null ? { type: 'search' } : { type: 'search', query },
  };
}

/** The search call's outcome from its web_search_tool_result block: sources and status, set on `item`. */
export function settleSearch(item: Json, result: Json): void {
  const content = result.content;
  if (!Array.isArray(content)) {
    item.status = 'failed';
    return;
  }
  const sources = content.flatMap((r: unknown) =>
    isRecord(r) && r.type === 'web_search_result' && typeof r.url === 'string' ? [{ type: 'url', url: r.url }] : [],
  );
  item.status = 'completed';
  item.action = { ...(isRecord(item.action) ? item.action : { type: 'search' }), sources };
}
