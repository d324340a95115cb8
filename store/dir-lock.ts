import { closeSync, openSync, readFileSync, renameSync, unlinkSync, writeSync } from 'node:fs';
import { join } from 'node:path';

// One service per data directory. LMDB would let two processes share the store, but two services on one
// directory would each bootstrap, sweep the other's upload spill files and split the clients between them.
// The lock is a file holding the owner's PID, created exclusively; it is removed on any orderly exit, and one
// left by a process that is gone (kill -9, a crash, a reboot) is taken over.

export const LOCK_FILE = 'service.lock';

export class DataDirLocked extends Error {
  constructor(readonly pid: number) {
    super(
      `Another Switchyard service (PID ${pid}) is already running on this data directory. Stop it first, or give ` +
        `this one another SWITCHYARD_HOME.`,
    );
    this.name = 'DataDirLocked';
  }
}

export interface DirLock {
  release(): void;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (err) {
    // EPERM: the PID exists but belongs to someone else, so it is alive.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
  // A killed process nobody has reaped yet (a container without an init) still answers signal 0.
  try {
    return !/^\d+ \(.*\) Z/s.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return true;
  }
}

function ownerOf(path: string): number | null {
  try {
    const pid = Number(readFileSync(path, 'utf8').trim());
    return Number.isSafeInteger(pid) && pid > 0 ? pid : null;
  } catch {
    return null;
  }
}

/** Takes the data directory's lock for this process, or throws DataDirLocked naming the live owner. */
export function lockDataDir(dataDir: string): DirLock {
  const path = join(dataDir, LOCK_FILE);
  for (let attempt = 0; ; attempt++) {
    try {
      const fd = openSync(path, 'wx', 0o600);
      writeSync(fd, `${process.pid}\n`);
      closeSync(fd);
      break;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 2) throw err;
      const owner = ownerOf(path);
      if (owner !== null && owner !== process.pid && alive(owner)) throw new DataDirLocked(owner);
      // Stale (or half-written by an owner that died at once): move it aside atomically, so that of two
      // services taking it over at the same moment only one removes it, and try again.
      try {
        renameSync(path, `${path}.stale-${process.pid}`);
        unlinkSync(`${path}.stale-${process.pid}`);
      } catch {
        // Another process took it over first; the next attempt sees its lock.
      }
    }
  }
  let held = true;
  const release = () => {
    if (!held) return;
    held = false;
    if (ownerOf(path) === process.pid) {
      try {
        unlinkSync(path);
      } catch {
        // Already gone.
      }
    }
  };
  // Any exit, orderly or not, short of SIGKILL: the next start then needs no stale check.
  process.once('exit', release);
  return { release };
}
