// One POST to the upstream through undici's dispatch: the floor's only upstream work, on the edge's thread
// (edge.mjs, FLOOR_WORKER=inline) or in a worker (worker.mjs).

/** The answer read whole. */
export function postWhole(pool, path, body, done) {
  let status = 0;
  const chunks = [];
  pool.dispatch(
    { path, method: 'POST', headers: { 'content-type': 'application/json' }, body },
    {
      onConnect() {},
      onHeaders(code) {
        status = code;
        return true;
      },
      onData(chunk) {
        chunks.push(chunk);
        return true;
      },
      onComplete: () => done(status, Buffer.concat(chunks)),
      onError: () => done(502, Buffer.alloc(0)),
    },
  );
}

/**
 * The answer relayed as it arrives (a stream): `head(status)` once, `data(text)` per chunk read (latin1, one
 * character per byte, so any bytes survive), then `end()`. A failure before the head answers 502.
 */
export function postStream(pool, path, body, { head, data, end }) {
  let started = false;
  pool.dispatch(
    { path, method: 'POST', headers: { 'content-type': 'application/json' }, body },
    {
      onConnect() {},
      onHeaders(code) {
        started = true;
        head(code);
        return true;
      },
      onData(chunk) {
        data(chunk.toString('latin1'));
        return true;
      },
      onComplete: () => end(),
      onError: () => {
        if (!started) head(502);
        end();
      },
    },
  );
}
