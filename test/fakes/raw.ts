import { once } from 'node:events';
import { createServer, type AddressInfo, type Socket } from 'node:net';

// An upstream that answers from a plain TCP socket with whatever bytes a test scripts: status lines, headers
// and framings no HTTP server library would write (`HTTP/1.1 2OO WHAT`, a control byte in a header, a
// chunked body cut before its last chunk, fewer bytes than its Content-Length). Each POST is read whole
// (head and Content-Length body), then answered with the next script's writes, one after another, and the
// connection is closed. Any other method (the service's own model refresh) gets a plain 404, so that
// background calls never take a test's script.

export interface RawFake {
  origin: string;
  /** Queues the answer to the next request: the pieces are written in order, each once the last went out. */
  answerNext(...pieces: (string | Buffer)[]): void;
  /** How many requests reached the fake. */
  requests(): number;
  close(): Promise<void>;
}

const HEAD_END = '\r\n\r\n';

/** A well-formed answer, for the parts of a script that are not the point of the test. */
export function httpAnswer(status: number, contentType: string, body: string): string {
  return (
    `HTTP/1.1 ${status} X\r\ncontent-type: ${contentType}\r\ncontent-length: ` +
    `${Buffer.byteLength(body)}\r\n\r\n${body}`
  );
}

/** Resolves with the method once the socket holds one whole request (its head and its Content-Length body). */
function readRequest(socket: Socket): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    const onData = (chunk: Buffer): void => {
      text += chunk.toString('latin1');
      const end = text.indexOf(HEAD_END);
      if (end === -1) return;
      const length = /\r\ncontent-length:\s*(\d+)/i.exec(text.slice(0, end))?.[1];
      if (text.length - end - HEAD_END.length < Number(length ?? 0)) return;
      socket.off('data', onData);
      resolve(text.slice(0, text.indexOf(' ')));
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.once('end', () => reject(new Error('the client closed before a whole request')));
  });
}

export async function startRawFake(): Promise<RawFake> {
  const scripts: (string | Buffer)[][] = [];
  const sockets = new Set<Socket>();
  let count = 0;

  async function serve(socket: Socket): Promise<void> {
    const method = await readRequest(socket);
    if (method !== 'POST') {
      socket.end(httpAnswer(404, 'application/json', '{"error":{"message":"not found"}}'));
      return;
    }
    count++;
    const pieces = scripts.shift() ?? [httpAnswer(500, 'application/json', '{"error":{"message":"nothing queued"}}')];
    for (const piece of pieces) {
      if (socket.destroyed) return;
      await new Promise<void>((resolve) => socket.write(piece, () => resolve()));
    }
    socket.end();
  }

  const server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    serve(socket).catch(() => socket.destroy());
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    answerNext: (...pieces) => void scripts.push(pieces),
    requests: () => count,
    async close() {
      for (const socket of sockets) socket.destroy();
      server.close();
      await once(server, 'close');
    },
  };
}
