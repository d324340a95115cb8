// Words for people, shared by the CLI and the service's messages.
//
// Endpoint family IDs in the words people use: `styleA.chat_completions` is "OpenAI-style chat completions",
// `styleB.messages` "Anthropic-style messages". The IDs themselves stay in the API's JSON fields, in --json and in
// the files people write; the CLI, the service's error messages and the dashboard (dashboard/format.js holds a
// copy of this table: it cannot import TypeScript) say the words.

import type { EndpointFamily } from './families.ts';

export const FAMILY_WORDS: Readonly<Record<EndpointFamily, string>> = {
  'styleA.chat_completions': 'OpenAI-style chat completions',
  'styleA.embeddings': 'OpenAI-style embeddings',
  'styleA.responses': 'OpenAI-style responses',
  'styleA.images': 'OpenAI-style images',
  'styleA.audio_speech': 'OpenAI-style speech',
  'styleA.audio_transcriptions': 'OpenAI-style transcriptions',
  'styleB.messages': 'Anthropic-style messages',
  'rerank.documents': 'reranking',
};

/** A family in words; an ID this table does not know keeps its name with spaces for underscores. */
export function familyWords(family: string): string {
  const known = (FAMILY_WORDS as Record<string, string>)[family];
  if (known !== undefined) return known;
  const [group, name] = family.includes('.') ? family.split('.', 2) : ['', family];
  const words = (name ?? '').replace(/_/g, ' ');
  if (group === 'styleA') return `OpenAI-style ${words}`;
  if (group === 'styleB') return `Anthropic-style ${words}`;
  return words;
}

/** For messages about fields where people write the ID: the words, then the ID in backquotes. */
export const familyWordsAndId = (family: string) => `${familyWords(family)} (\`${family}\`)`;

/**
 * `a` or `an` before a word, by its sound where it matters here: "an openai_compatible provider", "an ollama
 * provider", "a llamacpp provider". A leading vowel letter takes `an`, except the few that sound like "you".
 */
export function withArticle(word: string, sentenceStart = false): string {
  const an = /^[aeiou]/i.test(word) && !/^(u[nr]i|use|usa|eu)/i.test(word);
  return `${sentenceStart ? 'A' : 'a'}${an ? 'n' : ''} ${word}`;
}
