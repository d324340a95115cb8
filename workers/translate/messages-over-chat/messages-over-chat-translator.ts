import type { Translator } from '../types.ts';
import { messagesError, request, response } from './messages-over-chat.ts';
import { messagesStreamOverChat } from './messages-over-chat-stream.ts';

export const messagesOverChat: Translator = {
  request,
  response,
  stream: messagesStreamOverChat,
  error: messagesError,
};
