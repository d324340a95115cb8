import { outputText } from './responses-over-chat/responses-chat.ts';
import { customInput } from './responses-tools.ts';

// The Responses API's stream events that both stream translations write (responses-over-chat and
// responses-over-messages): every event is `event: <type>` with a data object carrying the same `type` and a
// `sequence_number` counting from 0; a message item's and a custom tool call's events as OpenAI orders them.

type Json = Record<string, unknown>;

/** Writes one event, numbered in order. */
export type Emit = (type: string, fields: Json) => string;

export function eventWriter(): Emit {
  let sequence = 0;
  return (type, fields) =>
    `event: ${type}\ndata: ${JSON.stringify({ type, sequence_number: sequence++, ...fields })}\n\n`;
}

/** The stream's first two events, both carrying the response in progress. */
export function responseStarted(event: Emit, response: Json): string {
  return event('response.created', { response }) + event('response.in_progress', { response });
}

/** A message item opened at `index`, with its one output_text part. */
export function messageAdded(event: Emit, item: Json, index: number): string {
  return (
    event('response.output_item.added', { output_index: index, item: { ...item, content: [] } }) +
    event('response.content_part.added', {
      item_id: item.id,
      output_index: index,
      content_index: 0,
      part: outputText(''),
    })
  );
}

export function textDeltaEvent(event: Emit, item: Json, index: number, delta: string): string {
  return event('response.output_text.delta', {
    item_id: item.id,
    output_index: index,
    content_index: 0,
    delta,
    logprobs: [],
  });
}

/** A message item closed with its whole text; `incomplete` when the answer stopped at its token bound. */
export function messageDone(event: Emit, item: Json, index: number, text: string, incomplete: boolean): string {
  const at = { item_id: item.id, output_index: index, content_index: 0 };
  item.status = incomplete ? 'incomplete' : 'completed';
  const part = outputText(text);
  item.content = [part];
  return (
    event('response.output_text.done', { ...at, text, logprobs: [] }) +
    event('response.content_part.done', { ...at, part }) +
    event('response.output_item.done', { output_index: index, item })
  );
}

/** A custom tool's call closed: its input, which arrived as JSON arguments, streams whole now. */
export function customCallDone(event: Emit, item: Json, index: number, text: string): string {
  const input = customInput(text);
  item.input = input;
  item.status = 'completed';
  const at = { item_id: item.id, output_index: index };
  return (
    (input === '' ? '' : event('response.custom_tool_call_input.delta', { ...at, delta: input })) +
    event('response.custom_tool_call_input.done', { ...at, input }) +
    event('response.output_item.done', { output_index: index, item })
  );
}
