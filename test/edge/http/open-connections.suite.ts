import assert from 'node:assert/strict';
import { once } from 'node:events';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import { test } from 'node:test';
import { connectionsClosed, openConnections } from '../../../edge/http/open-connections.ts';

// What a stopping edge thread waits on (edge/http/open-connections.ts): this process's connections on the
// service's port, read from /proc. Here both ends live in the test process: only the server's side has the
// port as its local one, so each connection counts once.

test('counts the accepted connections on a port until they close', { skip: process.platform !== 'linux' }, async () => {
  const accepted: Socket[] = [];
  const server = createServer((socket) => void accepted.push(socket));
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  assert.equal(openConnections(port), 0, 'a listening socket is not a connection');
  const clients = await Promise.all(
    [1, 2, 3].map(async () => {
      const socket = connect(port, '127.0.0.1');
      await once(socket, 'connect');
      return socket;
    }),
  );
  while (accepted.length < 3) await once(server, 'connection');
  assert.equal(openConnections(port), 3);
  const closed = connectionsClosed(port, 10_000, 5);
  for (const socket of clients) socket.destroy();
  for (const socket of accepted) socket.destroy();
  assert.equal(await closed, true);
  assert.equal(openConnections(port), 0);
  server.close();
});

test('gives up after its bound while a connection stays open', { skip: process.platform !== 'linux' }, async () => {
  const server = createServer(() => undefined);
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  const client = connect(port, '127.0.0.1');
  await once(server, 'connection');
  assert.equal(await connectionsClosed(port, 30, 5), false);
  client.destroy();
  server.close();
});
