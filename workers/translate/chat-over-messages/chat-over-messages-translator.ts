import type { Translator } from '../types.ts';
import { chatError, request, response } from './chat-over-messages.ts';
import { chatStreamOverMessages } from './chat-over-messages-stream.ts';

export const chatOverMessages: Translator = {
  request,
  response,
  stream: chatStreamOverMessages,
  error: chatError,
};
