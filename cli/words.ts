// Endpoint family IDs in the words people use: `styleA.chat_completions` is "OpenAI-style chat completions",
// `styleB.messages` "Anthropic-style messages". The IDs themselves stay in --json and in the files people write.

export function familyWords(family: string): string {
  const [group, name] = family.includes('.') ? family.split('.', 2) : ['', family];
  const words = (name ?? '').replace(/_/g, ' ');
  if (group === 'styleA') return `OpenAI-style ${words}`;
  if (group === 'styleB') return `Anthropic-style ${words}`;
  return words;
}
