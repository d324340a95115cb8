import { argumentsObject, cannot, imageSourceOf, isRecord, str } from '../common.ts';
import { customArguments, ToolNames } from '../responses-tools.ts';

// A Responses request's `instructions` and `input` items as Messages' `system` and `messages` (the request
// half of the translation is responses-messages.ts). Calls the client hands back name the tool the upstream
// was offered (responses-tools.ts): a namespaced function by its flattened name, a custom tool call as a
// tool_use of one `input` string.

type Json = Record<string, unknown>;

const present = (v: unknown): boolean => v !== undefined && v !== null;

/**
 * A reasoning item's `encrypted_content` carries a thinking block's signature as it is (base64, never a colon);
 * a redacted_thinking block's data travels behind this prefix so that it goes back as the same block type.
 */
export const REDACTED_PREFIX = 'redacted_thinking:';

function textPart(part: Json, param: string): string {
  if (
    (part.type === 'input_text' || part.type === 'output_text' || part.type === 'text') &&
    typeof part.text === 'string'
  )
    return part.text;
  if (part.type === 'refusal' && typeof part.refusal === 'string') return part.refusal;
  throw cannot(`${param}.type`, `A \`${String(part.type).slice(0, 40)}\` part cannot be sent to a Messages model.`);
}

function imageBlock(part: Json, param: string): Json {
  if (typeof part.image_url !== 'string')
    throw cannot(
      `${param}.image_url`,
      'Only images given by `image_url` (a base64 `data:` URL or an http URL) translate to a Messages model.',
    );
  return { type: 'image', source: imageSourceOf(part.image_url, `${param}.image_url`) };
}

/** Content parts as Messages blocks; images only where Messages takes them (user turns, tool results). */
function blocksOf(content: unknown, param: string, images: boolean): Json[] {
  if (typeof content === 'string') return content === '' ? [] : [{ type: 'text', text: content }];
  if (!Array.isArray(content)) throw cannot(param, 'Message content must be a string or an array of content parts.');
  const blocks: Json[] = [];
  content.forEach((part: unknown, i) => {
    const at = `${param}[${i}]`;
    if (!isRecord(part)) throw cannot(at, 'A content part must be an object.');
    if (images && part.type === 'input_image') blocks.push(imageBlock(part, at));
    else {
      // Messages refuses empty text blocks; an empty part carries nothing.
      const text = textPart(part, at);
      if (text !== '') blocks.push({ type: 'text', text });
    }
  });
  return blocks;
}

function systemText(content: unknown, param: string): string {
  return blocksOf(content, param, false)
    .map((b) => b.text as string)
    .join('');
}

/** A reasoning item handed back, as the thinking block it came from; null when it carries no signature. */
function thinkingBlock(item: Json): Json | null {
  const signature = str(item.encrypted_content);
  if (signature === null || signature === '') return null;
  if (signature.startsWith(REDACTED_PREFIX))
    return { type: 'redacted_thinking', data: signature.slice(REDACTED_PREFIX.length) };
  const texts = (list: unknown, type: string) =>
    Array.isArray(list)
      ? list.filter((p): p is Json => isRecord(p) && p.type === type).map((p) => str(p.text) ?? '')
      : [];
  // The signature covers the thinking text exactly: the summary this translation wrote is that text.
  const content = texts(item.content, 'reasoning_text');
  return {
    type: 'thinking',
    thinking: (content.length > 0 ? content : texts(item.summary, 'summary_text')).join(''),
    signature,
  };
}

function callIdOf(item: Json, at: string, what: string): string {
  if (typeof item.call_id !== 'string' || item.call_id === '')
    throw cannot(`${at}.call_id`, `A ${what} needs its \`call_id\`.`);
  return item.call_id;
}

function toolResult(item: Json, at: string): Json {
  const id = callIdOf(item, at, 'tool call output');
  const output = item.output;
  if (typeof output === 'string') return { type: 'tool_result', tool_use_id: id, content: output };
  if (!Array.isArray(output)) throw cannot(`${at}.output`, '`output` must be a string or an array of content parts.');
  return { type: 'tool_result', tool_use_id: id, content: blocksOf(output, `${at}.output`, true) };
}

/** A function or custom tool call handed back, as the tool_use the upstream made. */
function toolUse(item: Json, at: string, names: ToolNames): Json {
  const custom = item.type === 'custom_tool_call';
  const id = callIdOf(item, at, custom ? 'custom tool call' : 'function call');
  if (typeof item.name !== 'string' || item.name === '') throw cannot(`${at}.name`, 'A tool call needs its `name`.');
  const namespace = typeof item.namespace === 'string' && item.namespace !== '' ? item.namespace : null;
  const name = names.upstream(item.name, namespace);
  if (custom) {
    if (typeof item.input !== 'string') throw cannot(`${at}.input`, "A custom tool call's `input` is a string.");
    return { type: 'tool_use', id, name, input: customArguments(item.input) };
  }
  if (typeof item.arguments !== 'string')
    throw cannot(`${at}.arguments`, "A function call's `arguments` is a JSON string.");
  return { type: 'tool_use', id, name, input: argumentsObject(item.arguments, `${at}.arguments`) };
}

/** Consecutive turns of one role join: parallel tool results must share the user turn after the calls. */
function push(messages: Json[], role: 'user' | 'assistant', blocks: Json[]): void {
  if (blocks.length === 0) return;
  const last = messages.at(-1);
  if (last !== undefined && last.role === role) (last.content as Json[]).push(...blocks);
  else messages.push({ role, content: blocks });
}

function message(item: Json, at: string, system: Json[], messages: Json[]): void {
  const content = item.content;
  if (item.role === 'system' || item.role === 'developer') {
    const text = systemText(content, `${at}.content`);
    if (text !== '') system.push({ type: 'text', text });
  } else if (item.role === 'user') push(messages, 'user', blocksOf(content, `${at}.content`, true));
  else if (item.role === 'assistant') push(messages, 'assistant', blocksOf(content, `${at}.content`, false));
  else throw cannot(`${at}.role`, 'A message role is user, assistant, system or developer.');
}

/**
 * `instructions`, then system and developer messages wherever they stand, as Messages' `system`. `names`
 * maps the tools of calls handed back to the upstream's names (the request's own plan).
 */
export function messagesOf(
  input: unknown,
  instructions: unknown,
  names: ToolNames = new ToolNames(),
): { system: Json[]; messages: Json[] } {
  const system: Json[] = [];
  const messages: Json[] = [];
  if (present(instructions)) {
    if (typeof instructions !== 'string') throw cannot('instructions', '`instructions` must be a string.');
    if (instructions !== '') system.push({ type: 'text', text: instructions });
  }
  if (typeof input === 'string') {
    messages.push({ role: 'user', content: [{ type: 'text', text: input }] });
    return { system, messages };
  }
  if (!Array.isArray(input) || input.length === 0)
    throw cannot('input', '`input` must be a string or a non-empty array of input items.');
  input.forEach((item: unknown, i) => {
    const at = `input[${i}]`;
    if (!isRecord(item)) throw cannot(at, 'An input item must be an object.');
    switch (item.type ?? 'message') {
      case 'message':
        return message(item, at, system, messages);
      case 'function_call':
      case 'custom_tool_call':
        return push(messages, 'assistant', [toolUse(item, at, names)]);
      case 'function_call_output':
      case 'custom_tool_call_output':
        return push(messages, 'user', [toolResult(item, at)]);
      case 'reasoning': {
        // Without its signature a thinking block is refused upstream: such an item is dropped.
        const block = thinkingBlock(item);
        if (block !== null) push(messages, 'assistant', [block]);
        return;
      }
      case 'web_search_call':
        // A search's results live only in the answer that ran it (Messages' own come back encrypted in its
        // blocks, which a web_search_call item does not carry); the text the model wrote from them stays.
        return;
      case 'item_reference':
        throw cannot(`${at}.type`, 'Item references name stored items; models served over the Messages API keep none.');
      default:
        throw cannot(
          `${at}.type`,
          'Input items are messages, function and custom tool calls and their outputs, reasoning items and web ' +
            'search calls here.',
        );
    }
  });
  return { system, messages };
}
