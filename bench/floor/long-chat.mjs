// Prints a chat request the size of a coding agent's (~24 KB: twenty turns, each with a block of code full of
// quotes and braces) for compare.sh: FLOOR_BODY=<file> bash bench/floor/compare.sh. The bench's own requests
// are one-line questions, which hide what the relay does with a body's bytes.
//
//   node bench/floor/long-chat.mjs [turns=20] > /tmp/long-chat.json
const turns = Number(process.argv[2] ?? 20);
const code = 'const x = {"a": 1, "b": [2, 3]};\n'.repeat(30);
const messages = Array.from({ length: turns }, (_, i) => ({
  role: i % 2 === 0 ? 'user' : 'assistant',
  content: `Step ${i}: refactor "parse" so that it handles \\"quoted\\" input. The code so far:\n${code}`,
}));
process.stdout.write(JSON.stringify({ model: 'bench-model', messages, max_tokens: 32 }));
