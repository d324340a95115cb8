// One POST to the upstream through undici's dispatch: the floor's only upstream work, on the edge's thread
// (edge.mjs, FLOOR_WORKER=inline) or in a worker (worker.mjs). An event stream is relayed as it is read
// (`head(status)`, then `data(text)` per chunk read, latin1 so that any bytes survive, then `end()`); any
// other answer is read whole (`whole(status, bytes)`), as Switchyard decides by the answer's content type.

const isEventStream = (rawHeaders) => {
  for (let i = 0; i < rawHeaders.length; i += 2) {
    if (rawHeaders[i].length === 12 && rawHeaders[i].toString('latin1').toLowerCase() === 'content-type')
      return rawHeaders[i + 1].includes('text/event-stream');
  }
  return false;
};

export function relayCall(pool, path, body, { whole, head, data, end }) {
  let status = 0;
  let streaming = false;
  const chunks = [];
  pool.dispatch(
    { path, method: 'POST', headers: { 'content-type': 'application/json' }, body },
    {
      onConnect() {},
      onHeaders(code, rawHeaders) {
        status = code;
        streaming = isEventStream(rawHeaders);
        if (streaming) head(code);
        return true;
      },
      onData(chunk) {
        if (streaming) data(chunk.toString('latin1'));
        else chunks.push(chunk);
        return true;
      },
      onComplete: () => (streaming ? end() : whole(status, Buffer.concat(chunks))),
      onError: () => (streaming ? end() : whole(502, Buffer.alloc(0))),
    },
  );
}
