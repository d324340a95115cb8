import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, type AddressInfo } from 'node:net';
import { describe, it } from 'node:test';
import { buildConnector } from 'undici';
import { createBodyArena, sharedBodyView } from '../../../workers/shared/body-arena.ts';

describe('body arena', () => {
  it('hands out slots until none is free, and none for a body larger than a slot', () => {
    const arena = createBodyArena(1024, 2);
    assert.equal(arena.acquire(1025), null);
    const a = arena.acquire(1000)!;
    const b = arena.acquire(10)!;
    assert.equal(a.body.length, 1000);
    assert.equal(b.body.length, 10);
    assert.notEqual(a.body.byteOffset, b.body.byteOffset);
    assert.equal(arena.acquire(10), null);
    assert.equal(arena.inUse(), 2);
    a.settle();
    assert.equal(arena.inUse(), 1);
    assert.equal(arena.acquire(10)!.body.byteOffset, a.body.byteOffset, 'the freed slot is reused');
  });

  it('a handed-off slot is the worker’s: settling leaves it held, the worker’s free releases it', () => {
    const arena = createBodyArena(1024, 1);
    const lease = arena.acquire(100)!;
    lease.body.fill(7);
    const ref = arena.handOff(lease.body)!;
    assert.deepEqual(ref, { shared: 0, length: 100 });
    assert.deepEqual(
      [...sharedBodyView(arena.buffer, arena.slotSize, ref)],
      new Array(100).fill(7),
      'the worker sees the bytes',
    );
    lease.settle();
    assert.equal(arena.acquire(10), null, 'still the worker’s');
    assert.throws(() => arena.handOff(lease.body), /not the edge's/);
    arena.free(0);
    arena.free(0); // a second free (a dead worker's) changes nothing
    assert.equal(arena.inUse(), 0);
  });

  it('a late settle does not free the slot from the request that holds it now', () => {
    const arena = createBodyArena(1024, 1);
    const first = arena.acquire(100)!;
    arena.handOff(first.body);
    arena.free(0); // the worker wrote it; the first request has not settled yet
    const second = arena.acquire(100)!;
    first.settle();
    assert.equal(arena.inUse(), 1);
    assert.equal(arena.acquire(100), null, 'the second request still holds the slot');
    assert.ok(arena.handOff(second.body));
  });

  it('bodies outside the arena are not its business', () => {
    const arena = createBodyArena(1024, 1);
    assert.equal(arena.handOff(Buffer.alloc(100)), null);
    assert.equal(arena.inUse(), 0);
  });

  it(
    'undici sockets buffer less than an arena body (the worker frees a slot once undici takes its ' + 'chunk)',
    async () => {
      // relay.ts frees a slot when undici asks for the body's next chunk, which it does once socket.write
      // returned true (under the high-water mark, so a larger chunk is written whole) or after 'drain'. Arena
      // bodies are larger than 64 KB: a socket buffering that much would make that signal too early.
      const server = createServer((socket) => socket.destroy());
      server.listen(0, '127.0.0.1');
      await once(server, 'listening');
      const { port } = server.address() as AddressInfo;
      const connect = buildConnector({ timeout: 1000 });
      const socket = await new Promise<import('node:net').Socket>((resolve, reject) =>
        connect(
          { hostname: '127.0.0.1', host: `127.0.0.1:${port}`, protocol: 'http:', port: String(port) } as never,
          (err, s) => (err ? reject(err) : resolve(s as never)),
        ),
      );
      try {
        assert.ok(
          socket.writableHighWaterMark <= 64 * 1024,
          `writable high-water mark ${socket.writableHighWaterMark}`,
        );
      } finally {
        socket.destroy();
        server.close();
      }
    },
  );
});
