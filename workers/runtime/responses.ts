import {
  chatToResponse,
  responsesCallContext,
  responsesToChat,
  type ResponsesCallContext,
} from '../translate/responses-over-chat/responses-chat.ts';
import { responsesStream } from '../translate/responses-over-chat/responses-chat-stream.ts';
import { parseChatRequest } from './chat.ts';
import type { CallOutput } from './output.ts';

// The Responses API on a loaded model, served over the runtime's own chat completions with the same pure
// translation the proxy uses for chat-only upstreams (workers/translate/responses-chat*.ts): the
// request becomes a chat request, and the chat answer, whole or streamed, becomes the Responses answer on
// its way out. Function tools and function-call items map to chat tools and tool calls both ways, so the
// runtime's tools (workers/runtime/tools.ts) serve this route too. Stateless: the whole conversation comes in
// `input`.

export function parseResponsesRequest(body: Record<string, unknown>): {
  chat: ReturnType<typeof parseChatRequest>;
  call: ResponsesCallContext;
} {
  const { request, plan } = responsesToChat(body);
  // The answer names each call's tool as the client did (a namespaced function, a custom tool).
  return { chat: parseChatRequest(request), call: responsesCallContext(body, plan.names) };
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
