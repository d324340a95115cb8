import { isRecord } from '../../shared/shape.ts';
import {
  chatUsage,
  createCallLedger,
  hasUsageObject,
  mayHoldUsageObject,
  nameOf,
  NO_TOKENS,
  parseJson,
  report,
  type UsageCollector,
} from './report.ts';

// styleA Chat Completions. A stream reports usage in one chunk (with `stream_options.include_usage` the
// last one before `[DONE]`, whose `choices` is empty; some local servers attach it to the finishing chunk)
// and introduces each tool call once, in the first delta that carries its index, id and function name.
// Most chunks are content deltas, and with include_usage every one of them says `"usage":null`: a chunk
// is parsed only when its text can hold a usage object or a named call, and decoded only when its bytes can.

// A named call needs `"tool_calls"` or `"function_call"`, both of which hold this (and `_` is rarer than `"`).
const CALL = Buffer.from('_call');
const DONE = Buffer.from('[DONE]');

/** `function` tools name the call under `function`, free-form custom tools under `custom`. */
function callName(call: Record<string, unknown>): string | null {
  if (isRecord(call.function)) return nameOf(call.function.name);
  if (isRecord(call.custom)) return nameOf(call.custom.name);
  return null;
}

export function createChatCompletionsCollector(withCost: boolean): UsageCollector {
  let tokens = NO_TOKENS;
  const calls = createCallLedger();
  let done = false;

  function noteCalls(choices: unknown, part: 'message' | 'delta'): void {
    if (!Array.isArray(choices)) return;
    choices.forEach((choice: unknown, position) => {
      if (!isRecord(choice)) return;
      const message = choice[part];
      if (!isRecord(message)) return;
      const c = typeof choice.index === 'number' ? choice.index : position;
      if (Array.isArray(message.tool_calls)) {
        for (const call of message.tool_calls as unknown[]) {
          if (!isRecord(call)) continue;
          const name = callName(call);
          if (name === null) continue;
          // In a whole message each entry is its own call. In a stream, deltas of one call share its index
          // (OpenAI, vLLM, llama-server) or, from servers that send no index, its id.
          let key: string | null = null;
          if (part === 'delta') {
            if (typeof call.index === 'number') key = `${c}#${call.index}`;
            else if (typeof call.id === 'string' && call.id !== '') key = `${c}@${call.id}`;
          }
          calls.note(key, name);
        }
      }
      // The deprecated `functions` API: at most one call per choice.
      const legacy = isRecord(message.function_call) ? nameOf(message.function_call.name) : null;
      if (legacy !== null) calls.note(`${c}.function_call`, legacy);
    });
  }

  return {
    json(body) {
      if (!isRecord(body)) return;
      if (isRecord(body.usage)) tokens = chatUsage(body.usage, withCost);
      noteCalls(body.choices, 'message');
    },
    event(ev) {
      if (done) return;
      const data = ev.data;
      const hasUsage = hasUsageObject(data);
      // A quote cannot stand unescaped inside a JSON string, so content text never matches `"name"`.
      const hasCall = data.includes('"name"') && (data.includes('"tool_calls"') || data.includes('"function_call"'));
      if (!hasUsage && !hasCall) {
        if (data === '[DONE]') done = true;
        return;
      }
      const chunk = parseJson(data);
      if (!isRecord(chunk)) return;
      if (hasUsage && isRecord(chunk.usage)) tokens = chatUsage(chunk.usage, withCost);
      if (hasCall) noteCalls(chunk.choices, 'delta');
    },
    mayRead: (block, noUsageObject = false) =>
      !done && ((!noUsageObject && mayHoldUsageObject(block)) || block.includes(CALL) || block.includes(DONE)),
    closed: () => done,
    result: () => report(tokens, calls, null),
  };
}
