import { isRecord } from '../../shared/shape.ts';
import { createCallLedger, nameOf, NO_TOKENS, report, responsesUsage, type UsageCollector } from './report.ts';
import { createTypeFilter } from './sniff.ts';

// styleA Responses (create and compact). The answer's `output` lists the model's items; every item type
// ending in `_call` is a tool call (function_call, custom_tool_call, mcp_call, web_search_call,
// file_search_call, computer_call, code_interpreter_call, image_generation_call, local_shell_call, and
// whatever comes next). `*_call_output` items are inputs and never appear in `output`.
// A stream names the response in `response.created` and ends with `response.completed`, `.incomplete` or
// `.failed`, each carrying the whole response with its usage. Items are also noted as they are added, so
// that a stream cut before its end still counts the calls it made; keyed by item ID (or position), an item
// seen in both places is one call.

const TERMINAL = ['response.completed', 'response.incomplete', 'response.failed'];
const ITEM = ['response.output_item.added', 'response.output_item.done'];
const filter = createTypeFilter(['response.created', 'response.in_progress', ...ITEM, ...TERMINAL]);

/** Item events are parsed only when they can hold a tool call: a message item's text is escaped JSON. */
const itemMayBeCall = (type: string, data: string): boolean =>
  !type.startsWith('response.output_item.') || data.includes('_call"');

export function createResponsesCollector(withCost: boolean): UsageCollector {
  let tokens = NO_TOKENS;
  let responseId: string | null = null;
  const calls = createCallLedger();

  function noteItem(item: unknown, position: unknown): void {
    if (!isRecord(item) || typeof item.type !== 'string' || !item.type.endsWith('_call')) return;
    const id = nameOf(item.id);
    const key = id !== null ? `@${id}` : typeof position === 'number' ? `#${position}` : null;
    calls.note(key, nameOf(item.name) ?? item.type);
  }

  function takeResponse(response: Record<string, unknown>, final: boolean): void {
    responseId ??= nameOf(response.id);
    if (!final) return;
    if (isRecord(response.usage)) tokens = responsesUsage(response.usage, withCost);
    if (Array.isArray(response.output)) (response.output as unknown[]).forEach(noteItem);
  }

  return {
    json(body) {
      if (isRecord(body)) takeResponse(body, true);
    },
    event(ev) {
      const found = filter.read(ev, itemMayBeCall);
      if (found === null) return;
      const { type, payload } = found;
      if (type.startsWith('response.output_item.')) noteItem(payload.item, payload.output_index);
      else if (isRecord(payload.response)) takeResponse(payload.response, TERMINAL.includes(type));
    },
    mayRead: (block) => filter.mayHold(block),
    result: () => report(tokens, calls, responseId),
  };
}
