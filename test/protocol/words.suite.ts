import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { FAMILIES } from '../../protocol/families.ts';
import { FAMILY_WORDS, familyWords, familyWordsAndId, withArticle } from '../../protocol/words.ts';

describe('family words', () => {
  test('every family has words, none of them the ID or its style group', () => {
    for (const f of FAMILIES) {
      assert.ok(FAMILY_WORDS[f], f);
      assert.doesNotMatch(familyWords(f), /style[AB]|_/, f);
    }
    assert.equal(familyWords('styleA.chat_completions'), 'OpenAI-style chat completions');
    assert.equal(familyWords('styleB.messages'), 'Anthropic-style messages');
  });

  test('an unknown ID keeps its name in words; the ID form quotes it', () => {
    assert.equal(familyWords('styleA.video_generations'), 'OpenAI-style video generations');
    assert.equal(familyWords('other.thing_done'), 'thing done');
    assert.equal(familyWordsAndId('styleB.messages'), 'Anthropic-style messages (`styleB.messages`)');
  });

  test('the dashboard holds the same table (it cannot import TypeScript)', async () => {
    const { FAMILY_WORDS: copy } = await import('../../dashboard/format.js');
    assert.deepEqual(copy, FAMILY_WORDS);
  });
});

describe('withArticle', () => {
  test('an before a vowel sound, a before the rest; capital at a sentence start', () => {
    assert.equal(withArticle('openai_compatible'), 'an openai_compatible');
    assert.equal(withArticle('ollama', true), 'An ollama');
    assert.equal(withArticle('embedded'), 'an embedded');
    assert.equal(withArticle('anthropic', true), 'An anthropic');
    assert.equal(withArticle('llamacpp', true), 'A llamacpp');
    assert.equal(withArticle('openrouter'), 'an openrouter');
    assert.equal(withArticle('copilot'), 'a copilot');
    assert.equal(withArticle('unix'), 'a unix');
  });
});
