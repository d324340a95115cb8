import { randomBytes } from 'node:crypto';
import { open, readdir, rm, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';

// An append-only byte log for a request body's prefix: the first `memoryLimit` bytes stay in memory, the
// rest go to a private temp file, and the whole can be read back in order.

const READ_SIZE = 64 * 1024;

const spillName = () => `switchyard-upload-${randomBytes(16).toString('hex')}.part`;
const SPILL_NAME = /^switchyard-upload-[0-9a-f]{32}\.part$/;

/**
 * Removes the spill files a process left behind when it died mid-upload (kill -9 runs no dispose). Run at
 * start, before anything spills: only names this module makes are touched. Resolves with how many.
 */
export async function sweepSpillDir(dir: string): Promise<number> {
  const doomed = (await readdir(dir)).filter((name) => SPILL_NAME.test(name));
  const removed = await Promise.allSettled(doomed.map((name) => rm(join(dir, name), { force: true })));
  return removed.filter((r) => r.status === 'fulfilled').length;
}

export interface SpillBuffer {
  /** Copies the chunk before returning, so the caller may reuse its buffer at once. */
  append(chunk: Uint8Array): Promise<void>;
  /** Everything appended before the iteration starts; yielded chunks must not be mutated. */
  read(): AsyncIterable<Uint8Array>;
  /** Bytes held in memory, counting copies still waiting for their file write. */
  memoryBytes(): number;
  dispose(): Promise<void>;
}

// A factory: one closure holds the buffer's state (the head in memory, the spill file, the write chain).
export function createSpillBuffer(dir: string, memoryLimit: number): SpillBuffer {
  const head: Buffer[] = [];
  let headBytes = 0;
  let spilling = false;
  let pendingBytes = 0;
  let file: { handle: FileHandle; path: string } | null = null;
  let fileBytes = 0;
  // Writes run one after another in append order; a failed write fails every later one, so a read can
  // never skip a hole.
  let queue: Promise<void> = Promise.resolve();
  let disposing: Promise<void> | null = null;

  async function spillFile(): Promise<FileHandle> {
    if (file !== null) return file.handle;
    // 128 random bits: the name cannot be guessed; 'wx+' (O_EXCL) refuses an existing file or symlink.
    const path = join(dir, spillName());
    const handle = await open(path, 'wx+', 0o600);
    file = { handle, path };
    return handle;
  }

  async function write(copy: Buffer): Promise<void> {
    const handle = await spillFile();
    let done = 0;
    while (done < copy.length) {
      const { bytesWritten } = await handle.write(copy, done, copy.length - done, fileBytes + done);
      done += bytesWritten;
    }
    fileBytes += copy.length;
  }

  function alive(): void {
    if (disposing !== null) throw new Error('The spill buffer has been disposed.');
  }

  return {
    append(chunk) {
      alive();
      if (chunk.length === 0) return Promise.resolve();
      const copy = Buffer.from(chunk);
      if (!spilling && headBytes + copy.length <= memoryLimit) {
        head.push(copy);
        headBytes += copy.length;
        return Promise.resolve();
      }
      spilling = true;
      pendingBytes += copy.length;
      const job = queue
        .then(() => write(copy))
        .finally(() => {
          pendingBytes -= copy.length;
        });
      queue = job;
      return job;
    },

    async *read() {
      alive();
      await queue;
      const chunks = head.slice();
      const handle = file?.handle;
      const size = fileBytes;
      yield* chunks;
      let position = 0;
      while (handle !== undefined && position < size) {
        alive();
        const buffer = Buffer.allocUnsafe(Math.min(READ_SIZE, size - position));
        const { bytesRead } = await handle.read(buffer, 0, buffer.length, position);
        if (bytesRead === 0) throw new Error('The spill file is shorter than what was written to it.');
        position += bytesRead;
        yield bytesRead === buffer.length ? buffer : buffer.subarray(0, bytesRead);
      }
    },

    memoryBytes: () => headBytes + pendingBytes,

    dispose() {
      disposing ??= (async () => {
        // A write still in flight may be creating the file; let it settle so the file is known, then remove it.
        await queue.catch(() => {});
        head.length = 0;
        headBytes = 0;
        if (file === null) return;
        const { handle, path } = file;
        file = null;
        await handle.close().catch(() => {});
        await rm(path, { force: true });
      })();
      return disposing;
    },
  };
}
