import { ServiceError } from '../../protocol/errors.ts';
import { chatToResponse, responsesCallContext, responsesToChatRequest, type ResponsesCallContext } from '../proxy/translate/responses-chat.ts';
import { responsesStream } from '../proxy/translate/responses-chat-stream.ts';
import { parseChatRequest } from './chat.ts';
import type { CallOutput } from './output.ts';

// The Responses API on a loaded model, served over the runtime's own chat completions with the same pure
// translation the proxy uses for chat-only upstreams (workers/proxy/translate/responses-chat*.ts): the
// request becomes a chat request, and the chat answer, whole or streamed, becomes the Responses answer on
// its way out. Stateless, text only: the runtime runs no tools.

const invalid = (param: string, message: string) => new ServiceError('INVALID_REQUEST', message, { param });

export function parseResponsesRequest(body: Record<string, unknown>): { chat: ReturnType<typeof parseChatRequest>; call: ResponsesCallContext } {
  if (Array.isArray(body.tools) && body.tools.length > 0) throw invalid('tools', 'The embedded runtime does not run tools.');
  if (Array.isArray(body.input)) {
    body.input.forEach((item: unknown, i) => {
      const type = (item as { type?: unknown } | null)?.type;
      if (type === 'function_call' || type === 'function_call_output') throw invalid(`input[${i}].type`, 'The embedded runtime does not run tools.');
    });
  }
  const chat = parseChatRequest(responsesToChatRequest(body));
  return { chat, call: responsesCallContext(body) };
}

/** A CallOutput that hands the chat route's answer on as the Responses answer. */
export function responsesOutput(out: CallOutput, call: ResponsesCallContext): CallOutput {
  const stream = responsesStream(call);
  const send = (text: string): void => {
    if (text !== '') out.write(text);
  };
  return {
    whole: (status, body, usage, acceleration) => out.whole(status, chatToResponse(body, call), usage, acceleration),
    head: (status, headers) => out.head(status, headers),
    write: (text) => send(stream.push(text)),
    end(usage, acceleration) {
      send(stream.end());
      out.end(usage, acceleration);
    },
    fail: (err, usage) => out.fail(err, usage),
    stopped: (usage) => out.stopped(usage),
    abort: () => out.abort(),
    settled: () => out.settled(),
  };
}
