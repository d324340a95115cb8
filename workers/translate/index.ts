import type { TranslationKey } from '../../protocol/translation.ts';
import { chatOverMessages } from './chat-over-messages/chat-over-messages-translator.ts';
import { messagesOverChat } from './messages-over-chat/messages-over-chat-translator.ts';
import { responsesOverChat } from './responses-over-chat/responses-chat-translator.ts';
import { responsesOverMessages } from './responses-over-messages/responses-messages-translator.ts';
import type { Translator } from './types.ts';

// The translators by row of protocol/translation.ts's table (the contract each keeps: types.ts). The registry
// is typed against that table: a row without a translator does not compile.

export const TRANSLATORS: Record<TranslationKey, Translator> = {
  'styleB.messages<-styleA.chat_completions': messagesOverChat,
  'styleA.chat_completions<-styleB.messages': chatOverMessages,
  'styleA.responses<-styleA.chat_completions': responsesOverChat,
  'styleA.responses<-styleB.messages': responsesOverMessages,
};

export { sse } from './common.ts';
export type { RequestState, StreamMapper, TranslateContext, TranslatedRequest, Translator } from './types.ts';
