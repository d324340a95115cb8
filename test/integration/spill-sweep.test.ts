import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { readdirSync, writeFileSync } from 'node:fs';
import { watch } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { test } from 'node:test';
import { startService, tempHome, type TestService } from '../helpers/service.ts';

// Regression (W2.6): an upload's spill file (`<data>/tmp/*.part`, edge/http/multipart-spill.ts) is removed
// when its call ends, but a service killed with SIGKILL mid-upload left it behind for good. The service now
// sweeps the spill directory when it starts, touching only names it makes itself.

const MiB = 1024 * 1024;
const isSpill = (name: string) => /^switchyard-upload-[0-9a-f]{32}\.part$/.test(name);

/** Starts a file-first multipart upload of more than the 4 MiB kept in memory, and leaves it unfinished. */
function startUpload(svc: TestService): void {
  const boundary = `----switchyard${randomBytes(8).toString('hex')}`;
  const req = httpRequest({
    host: '127.0.0.1',
    port: svc.port,
    method: 'POST',
    path: '/v1/audio/transcriptions',
    headers: {
      authorization: `Bearer ${svc.adminToken}`,
      'content-type': `multipart/form-data; boundary=${boundary}`,
      'content-length': String(32 * MiB),
    },
  });
  // The service dies under it: the socket error is the expected end of this request.
  req.on('error', () => {});
  req.write(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.wav"\r\nContent-Type: ` +
      `audio/wav\r\n\r\n`,
  );
  req.write(randomBytes(6 * MiB));
}

test('spill files left by a service killed mid-upload are removed at the next start, and nothing else is', {
  timeout: 60_000,
}, async () => {
  const home = tempHome();
  const spillDir = join(home, 'tmp');
  const first = await startService({ home });
  const spilled = (async () => {
    for await (const event of watch(spillDir)) if (event.filename && isSpill(event.filename)) return event.filename;
  })();
  startUpload(first);
  const leftover = await spilled;
  await first.kill9();
  assert.ok(readdirSync(spillDir).includes(leftover!), 'kill -9 left the spill file behind');

  // Files that only look alike are not the service's to remove.
  const foreign = ['notes.part', 'switchyard-upload-123.part', `switchyard-upload-${'a'.repeat(32)}.part.keep`];
  for (const name of foreign) writeFileSync(join(spillDir, name), 'x');

  const second = await startService({ home });
  try {
    const line = await second.waitForLog((l) => l.msg === 'removed upload spill files left by an earlier run');
    assert.equal(line.files, 1);
    assert.deepEqual(readdirSync(spillDir).sort(), [...foreign].sort());
  } finally {
    await second.stop();
  }
});
