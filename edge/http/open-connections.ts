import { readdirSync, readFileSync, readlinkSync } from 'node:fs';

// How many of this process's TCP connections are still open on the service's port (Linux, from /proc). An edge
// thread must not stop while uWebSockets.js holds a connection open in it: a worker thread whose loop still has
// a socket when it stops aborts the whole process (Node's check that a worker's loop closes empty). So a
// stopping edge thread closes its connections (App.close) and waits until none of the process's is open, its
// clients' side of the close included, at most until uWS's own idle timeout would have closed them.

/** uWS closes an HTTP connection idle this long (10 s, on a timer that ticks every 4 s), whatever the client does. */
export const UWS_IDLE_CLOSE_MS = 16_000;

/** Connection states that still hold a socket open here: all but LISTEN (0A), TIME_WAIT (06) and CLOSE (07). */
const GONE = new Set(['0A', '06', '07']);

function ownSocketInodes(): Set<string> {
  const inodes = new Set<string>();
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const link = readlinkSync(`/proc/self/fd/${fd}`);
      if (link.startsWith('socket:[')) inodes.add(link.slice(8, -1));
    } catch {
      // Closed between the listing and the read.
    }
  }
  return inodes;
}

/** This process's connections on local `port`, any thread's; 0 where /proc cannot tell. */
export function openConnections(port: number): number {
  let own: Set<string>;
  try {
    own = ownSocketInodes();
  } catch {
    return 0;
  }
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  let count = 0;
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'latin1');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const fields = line.trim().split(/\s+/);
      if (fields.length < 10) continue;
      const local = fields[1]!;
      if (!local.endsWith(`:${hexPort}`) || GONE.has(fields[3]!)) continue;
      if (own.has(fields[9]!)) count++;
    }
  }
  return count;
}

/** Settles once no connection of this process is open on `port`, or after `maxMs`; false then. */
export async function connectionsClosed(port: number, maxMs = UWS_IDLE_CLOSE_MS, everyMs = 50): Promise<boolean> {
  const until = Date.now() + maxMs;
  while (openConnections(port) > 0) {
    if (Date.now() >= until) return false;
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
  return true;
}
