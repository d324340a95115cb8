import { execFile } from 'node:child_process';
import { stat } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';

// Loads a model once in a child process before the runtime worker does. The verdict is kept per file
// version (size and modification time), so each file costs one probe until it changes.

export type ProbeVerdict = 'loads' | 'refused' | 'crashed';

const CHILD = fileURLToPath(new URL('./probe-child.js', import.meta.url));
// Loading reads the whole file (mmap); generous for multi-GiB models on slow disks.
const PROBE_TIMEOUT_MS = 120_000;

export function createProber(options: { gpu: () => boolean } = { gpu: () => false }) {
  const verdicts = new Map<string, Promise<ProbeVerdict>>();

  function run(path: string): Promise<ProbeVerdict> {
    return new Promise((resolvePromise) => {
      execFile(process.execPath, [CHILD, path, options.gpu() ? 'auto' : 'cpu'], { timeout: PROBE_TIMEOUT_MS, maxBuffer: 64 * 1024 }, (err, stdout) => {
        const line = stdout.trim().split('\n').pop() ?? '';
        if (!err && line === '{"ok":true}') return resolvePromise('loads');
        if (!err && line === '{"ok":false}') return resolvePromise('refused');
        resolvePromise('crashed');
      });
    });
  }

  return {
    async probe(path: string): Promise<ProbeVerdict> {
      const s = await stat(path);
      const key = `${path}\0${s.size}\0${s.mtimeMs}`;
      let verdict = verdicts.get(key);
      if (!verdict) {
        verdict = run(path);
        verdicts.set(key, verdict);
      }
      return verdict;
    },
  };
}
