import { readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { ServiceError } from '../protocol/errors.ts';

// The ports of the llama-server processes /v1/services supervises (services.ts): which a new service may take,
// and a leftover process of a killed run that still holds one.

/** A service that holds a port: its record names it. */
interface Holder {
  record: { port: number };
}

/**
 * Takes `port` on loopback for a moment (0: any free one) and answers the port it got, or null when it is in
 * use: a llama-server started there would fail to bind. A port picked so is kept in its service's record.
 */
export function bindable(port: number): Promise<number | null> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(null));
    server.listen(port, '127.0.0.1', () => {
      const bound = (server.address() as { port: number }).port;
      server.close(() => resolve(bound));
    });
  });
}

/** The first unprivileged port: below it a llama-server would need root, or would shadow a system service. */
export const MIN_SERVICE_PORT = 1024;

/**
 * A port a new service may be given: unprivileged, not the service's own listener, not another service's,
 * and free now (a port in use would make every start fail, or reach whatever holds it).
 */
export async function checkPort(port: number, ownPort: number | null, taken: Iterable<Holder>): Promise<void> {
  if (port < MIN_SERVICE_PORT)
    throw new ServiceError('INVALID_REQUEST', `\`port\` must be ${MIN_SERVICE_PORT} or above (0 picks a free one).`, {
      param: 'port',
    });
  if (port === ownPort)
    throw new ServiceError('INVALID_REQUEST', '`port` is the port this service listens on.', { param: 'port' });
  checkNotTaken(port, taken);
  if ((await bindable(port)) === null)
    throw new ServiceError('CONFLICT', `Port ${port} is in use by another program.`, { param: 'port' });
}

/** A stopped service holds no socket, but its record keeps its port: a picked free port may still be its. */
export function checkNotTaken(port: number, taken: Iterable<Holder>): void {
  for (const e of taken)
    if (e.record.port === port)
      throw new ServiceError('CONFLICT', `Another service listens on port ${port}.`, { param: 'port' });
}

/**
 * A process this service spawned before it was killed (no orderly stop ran) may still hold its port: ended
 * now, when /proc says it is still a llama-server listening on that port. Elsewhere than Linux nothing is
 * checked and nothing is killed.
 */
export async function endLeftover(pid: number, port: number): Promise<boolean> {
  let cmdline: string;
  try {
    cmdline = (await readFile(`/proc/${pid}/cmdline`, 'utf8')).split('\0').join(' ');
  } catch {
    return false;
  }
  if (!cmdline.includes('llama-server') || !cmdline.includes(`--port ${port}`)) return false;
  try {
    process.kill(pid, 'SIGKILL');
    return true;
  } catch {
    return false;
  }
}
