import { execFile } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

// Loads a model once in a child process before the runtime worker does. The verdict is kept per file
// version (size and modification time), so each file costs one probe until it changes.

export type ProbeVerdict = 'loads' | 'refused' | 'crashed';

export interface ProbeResult {
  verdict: ProbeVerdict;
  /** llama.cpp's reason for a refusal, without paths; null when it loads or gave none. */
  reason: string | null;
  /** The file version the verdict is about. */
  sizeBytes: number;
  mtimeMs: number;
}

const CHILD = fileURLToPath(new URL('./probe-child.js', import.meta.url));
// Loading reads the whole file (mmap); generous for multi-GiB models on slow disks.
const PROBE_TIMEOUT_MS = 120_000;
const MAX_REASON = 300;

/**
 * llama.cpp's message made fit for a response: its function-name prefix dropped, the file's path and any other
 * absolute path replaced (llama.cpp names the file it failed to open), control characters removed, bounded.
 */
export function cleanReason(raw: string, path: string): string {
  let text = raw.split(path).join('the file');
  // A path ends at whitespace, a quote or a closing bracket; one with such characters inside may leave a tail.
  text = text.replace(/(^|[\s'"(=])(?:[A-Za-z]:)?[\\/][^\s'"()]*/g, '$1<path>');
  text = text.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  while (/^[A-Za-z0-9_]+: /.test(text)) text = text.replace(/^[A-Za-z0-9_]+: /, '');
  return text.length > MAX_REASON ? `${text.slice(0, MAX_REASON - 3)}...` : text;
}

function parseAnswer(line: string): { ok?: unknown; reason?: unknown } | null {
  try {
    const value: unknown = JSON.parse(line);
    return value !== null && typeof value === 'object' ? (value as { ok?: unknown; reason?: unknown }) : null;
  } catch {
    return null;
  }
}

export function createProber(options: { gpu: () => boolean } = { gpu: () => false }) {
  const verdicts = new Map<string, Promise<ProbeResult>>();

  function run(path: string, sizeBytes: number, mtimeMs: number): Promise<ProbeResult> {
    return new Promise((resolvePromise) => {
      execFile(
        process.execPath,
        [CHILD, path, options.gpu() ? 'auto' : 'cpu'],
        { timeout: PROBE_TIMEOUT_MS, maxBuffer: 64 * 1024 },
        (err, stdout) => {
          const done = (verdict: ProbeVerdict, reason: string | null) =>
            resolvePromise({ verdict, reason, sizeBytes, mtimeMs });
          const answer = err ? null : parseAnswer(stdout.trim().split('\n').pop() ?? '');
          if (answer?.ok === true) return done('loads', null);
          if (answer?.ok === false)
            return done(
              'refused',
              typeof answer.reason === 'string' && answer.reason !== '' ? cleanReason(answer.reason, path) : null,
            );
          done('crashed', null);
        },
      );
    });
  }

  return {
    async probe(path: string): Promise<ProbeResult> {
      const s = await stat(path);
      const key = `${path}\0${s.size}\0${s.mtimeMs}`;
      let verdict = verdicts.get(key);
      if (!verdict) {
        verdict = run(path, s.size, s.mtimeMs);
        verdicts.set(key, verdict);
      }
      return verdict;
    },
  };
}
