import { CliError, EXIT } from './client.ts';

// A secret typed by a person or piped in by a script, never taken from argv (which `ps` shows every user) or
// the environment. On a terminal: a prompt on stderr and the characters not echoed; elsewhere: all of stdin,
// one trailing newline removed.

const MAX_BYTES = 16 * 1024;

/** The secret, or null when none was given (an empty line, or nothing on stdin). */
export async function readSecret(prompt: string, input: NodeJS.ReadStream = process.stdin): Promise<string | null> {
  const text = input.isTTY ? await typed(prompt, input) : await piped(input);
  if (text === '') return null;
  if (Buffer.byteLength(text) > MAX_BYTES || !/^[\x20-\x7e]+$/.test(text)) {
    throw new CliError('The key must be printable ASCII, at most 16 KiB.', EXIT.usage);
  }
  return text;
}

async function piped(input: NodeJS.ReadStream): Promise<string> {
  let text = '';
  for await (const chunk of input) {
    text += chunk;
    if (text.length > MAX_BYTES + 2) break;
  }
  return text.replace(/\r?\n$/, '');
}

function typed(prompt: string, input: NodeJS.ReadStream): Promise<string> {
  // Echo off before the prompt shows: a key typed as soon as it does is never echoed.
  input.setRawMode(true);
  process.stderr.write(prompt);
  input.setEncoding('utf8');
  input.resume();
  let text = '';
  return new Promise((resolve, reject) => {
    const done = (result: string | Error) => {
      input.setRawMode(false);
      input.pause();
      input.off('data', onData);
      process.stderr.write('\n');
      if (result instanceof Error) reject(result);
      else resolve(result);
    };
    const onData = (chunk: string) => {
      for (const ch of chunk) {
        if (ch === '\r' || ch === '\n') return done(text);
        if (ch === '\u0003') return done(new CliError('Cancelled.', EXIT.failed));
        if (ch === '\u007f' || ch === '\b') text = text.slice(0, -1);
        else if (ch >= ' ') text += ch;
      }
    };
    input.on('data', onData);
  });
}
