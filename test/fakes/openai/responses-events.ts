import { splitText, type JsonObject } from '../script.ts';
import { sseEvent, type InStreamError } from '../stream.ts';

// The Responses API's streamed form: typed events, each `event: <type>` with a data object carrying the
// same `type` and a `sequence_number` counting from 0, and no `[DONE]` at the end. The order is the one
// the openai SDK's accumulator checks: created, in_progress, then per output item added -> (content part
// added -> text deltas -> text done -> part done | argument deltas -> arguments done) -> item done, then
// completed.

export interface EventPlan {
  /** The finished response; `output` items are `message` or `function_call`. */
  final: JsonObject;
  textChunks: number;
  argumentChunks: number;
}

function textOf(item: JsonObject): string {
  const content = Array.isArray(item.content) ? (item.content[0] as JsonObject | undefined) : undefined;
  return typeof content?.text === 'string' ? content.text : '';
}

export function responseEvents({ final, textChunks, argumentChunks }: EventPlan): string[] {
  let sequence = 0;
  const events: string[] = [];
  const emit = (type: string, fields: JsonObject): void => {
    events.push(sseEvent(type, { type, sequence_number: sequence++, ...fields }));
  };
  const pending = { ...final, status: 'in_progress', output: [], usage: null, completed_at: null };
  emit('response.created', { response: pending });
  emit('response.in_progress', { response: pending });

  const output = Array.isArray(final.output) ? (final.output as JsonObject[]) : [];
  output.forEach((item, outputIndex) => {
    const itemId = item.id;
    if (item.type === 'message') {
      const text = textOf(item);
      const part = (t: string): JsonObject => ({ type: 'output_text', text: t, annotations: [], logprobs: [] });
      emit('response.output_item.added', {
        output_index: outputIndex,
        item: { ...item, status: 'in_progress', content: [] },
      });
      emit('response.content_part.added', {
        item_id: itemId,
        output_index: outputIndex,
        content_index: 0,
        part: part(''),
      });
      for (const delta of splitText(text, textChunks)) {
        emit('response.output_text.delta', {
          item_id: itemId,
          output_index: outputIndex,
          content_index: 0,
          delta,
          logprobs: [],
        });
      }
      emit('response.output_text.done', {
        item_id: itemId,
        output_index: outputIndex,
        content_index: 0,
        text,
        logprobs: [],
      });
      emit('response.content_part.done', {
        item_id: itemId,
        output_index: outputIndex,
        content_index: 0,
        part: part(text),
      });
    } else {
      const args = typeof item.arguments === 'string' ? item.arguments : '';
      emit('response.output_item.added', {
        output_index: outputIndex,
        item: { ...item, status: 'in_progress', arguments: '' },
      });
      for (const delta of splitText(args, argumentChunks)) {
        emit('response.function_call_arguments.delta', { item_id: itemId, output_index: outputIndex, delta });
      }
      emit('response.function_call_arguments.done', {
        item_id: itemId,
        output_index: outputIndex,
        name: item.name,
        arguments: args,
      });
    }
    emit('response.output_item.done', { output_index: outputIndex, item });
  });
  emit('response.completed', { response: final });
  return events;
}

/** How the Responses API reports a failure mid-stream: an `error` event, numbered like the rest. */
export function responseStreamError(error: InStreamError, eventsSent: number): string {
  return sseEvent('error', {
    type: 'error',
    code: error.type,
    message: error.message,
    param: null,
    sequence_number: eventsSent,
  });
}
