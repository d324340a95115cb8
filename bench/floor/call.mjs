// One POST to the upstream through undici's dispatch, its answer read whole: the floor's only upstream work,
// on the edge's thread (edge.mjs, FLOOR_WORKER=inline) or in a worker (worker.mjs).
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
