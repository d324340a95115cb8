import { ServiceError } from '../../../protocol/errors.ts';
import { customArguments, ToolNames } from '../responses-tools.ts';

// A Responses request's `instructions` and `input` items as chat messages (the request half of the
// translation is responses-chat.ts). Calls the client hands back name the tool the upstream was offered
// (responses-tools.ts): a namespaced function by its flattened name, a custom tool call as a function call
// with one `input` string.

type Json = Record<string, unknown>;

const invalid = (param: string, message: string) => new ServiceError('INVALID_REQUEST', message, { param });
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v);
const present = (v: unknown): boolean => v !== undefined && v !== null;

function partText(part: unknown, param: string): string {
  if (!isObject(part)) throw invalid(param, 'A content part must be an object.');
  if (
    (part.type === 'input_text' || part.type === 'output_text' || part.type === 'text') &&
    typeof part.text === 'string'
  )
    return part.text;
  if (part.type === 'refusal' && typeof part.refusal === 'string') return part.refusal;
  throw invalid(`${param}.type`, 'Only text parts (and `input_image` in user messages) translate to chat completions.');
}

/** A user or system message's content as chat takes it: a string, or text and image parts. */
function inputContent(content: unknown, param: string, images: boolean): unknown {
  if (typeof content === 'string') return content;
  if (!Array.isArray(content)) throw invalid(param, 'Message content must be a string or an array of content parts.');
  if (!images) return content.map((p, i) => partText(p, `${param}[${i}]`)).join('');
  return content.map((part: unknown, i) => {
    if (isObject(part) && part.type === 'input_image') {
      if (typeof part.image_url !== 'string')
        throw invalid(`${param}[${i}].image_url`, 'Only images given by `image_url` translate to chat completions.');
      return {
        type: 'image_url',
        image_url: { url: part.image_url, ...(typeof part.detail === 'string' && { detail: part.detail }) },
      };
    }
    return { type: 'text', text: partText(part, `${param}[${i}]`) };
  });
}

function toolOutput(output: unknown, param: string): string {
  if (typeof output === 'string') return output;
  if (Array.isArray(output)) return output.map((p, i) => partText(p, `${param}[${i}]`)).join('');
  throw invalid(param, '`output` must be a string or an array of text parts.');
}

const ROLES = new Set(['user', 'assistant', 'system', 'developer']);

/** Consecutive calls join one assistant turn (parallel calls), after any text that turn holds. */
function pushCall(messages: Json[], call: Json): void {
  const last = messages.at(-1);
  if (last?.role === 'assistant' && (Array.isArray(last.tool_calls) || typeof last.content === 'string')) {
    last.tool_calls = [...((last.tool_calls as unknown[] | undefined) ?? []), call];
  } else messages.push({ role: 'assistant', content: null, tool_calls: [call] });
}

/** A function or custom tool call handed back, as the chat tool call the upstream made. */
function toolCall(item: Json, at: string, names: ToolNames): Json {
  const custom = item.type === 'custom_tool_call';
  if (typeof item.call_id !== 'string' || item.call_id === '')
    throw invalid(`${at}.call_id`, `A ${custom ? 'custom tool call' : 'function call'} needs its \`call_id\`.`);
  if (typeof item.name !== 'string' || item.name === '') throw invalid(`${at}.name`, 'A tool call needs its `name`.');
  const namespace = typeof item.namespace === 'string' && item.namespace !== '' ? item.namespace : null;
  let args: string;
  if (custom) {
    if (typeof item.input !== 'string') throw invalid(`${at}.input`, "A custom tool call's `input` is a string.");
    args = JSON.stringify(customArguments(item.input));
  } else {
    if (typeof item.arguments !== 'string')
      throw invalid(`${at}.arguments`, "A function call's `arguments` is a JSON string.");
    args = item.arguments;
  }
  return {
    id: item.call_id,
    type: 'function',
    function: { name: names.upstream(item.name, namespace), arguments: args },
  };
}

/**
 * Responses input items as chat messages; consecutive function calls join one assistant turn (parallel
 * calls). `names` maps the tools of calls handed back to the upstream's names (the request's own plan).
 */
export function chatMessages(input: unknown, instructions: unknown, names: ToolNames = new ToolNames()): Json[] {
  const messages: Json[] = [];
  if (present(instructions)) {
    if (typeof instructions !== 'string') throw invalid('instructions', '`instructions` must be a string.');
    messages.push({ role: 'system', content: instructions });
  }
  if (typeof input === 'string') {
    messages.push({ role: 'user', content: input });
    return messages;
  }
  if (!Array.isArray(input) || input.length === 0)
    throw invalid('input', '`input` must be a string or a non-empty array of input items.');
  input.forEach((item: unknown, i) => {
    const at = `input[${i}]`;
    if (!isObject(item)) throw invalid(at, 'An input item must be an object.');
    const type = item.type ?? 'message';
    switch (type) {
      case 'message': {
        if (typeof item.role !== 'string' || !ROLES.has(item.role))
          throw invalid(`${at}.role`, 'A message role is user, assistant, system or developer.');
        const role = item.role === 'developer' ? 'system' : item.role;
        messages.push({ role, content: inputContent(item.content, `${at}.content`, role === 'user') });
        return;
      }
      case 'function_call':
      case 'custom_tool_call':
        return pushCall(messages, toolCall(item, at, names));
      case 'function_call_output':
      case 'custom_tool_call_output': {
        if (typeof item.call_id !== 'string' || item.call_id === '')
          throw invalid(`${at}.call_id`, 'A tool call output needs its `call_id`.');
        messages.push({ role: 'tool', tool_call_id: item.call_id, content: toolOutput(item.output, `${at}.output`) });
        return;
      }
      case 'reasoning':
        // A previous answer's reasoning, handed back: chat completions take no reasoning input.
        return;
      case 'web_search_call':
        // A search OpenAI ran for an earlier answer: its results are not in the item; the answer's text stays.
        return;
      case 'item_reference':
        throw invalid(
          `${at}.type`,
          'Item references name stored items; models served over chat completions keep none.',
        );
      default:
        throw invalid(
          `${at}.type`,
          'Input items are messages, function and custom tool calls and their outputs, reasoning items and web ' +
            'search calls here.',
        );
    }
  });
  return messages;
}
