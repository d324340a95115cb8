import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { readFileSync, readdirSync } from 'node:fs';
import { request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import * as openaiFake from '../fakes/openai.ts';
import { startService, type TestService } from '../helpers/service.ts';

// A 200 MB transcription upload streams through without the service holding it: the file part comes
// first (as the openai SDK sends it), so the service spills it to disk until the `model` field arrives.

const KEY = `fake-upload-key-${process.pid}`;
const MiB = 1024 * 1024;
const TOTAL_MIB = 200;
let svc: TestService;
let oa: openaiFake.OpenAIFake;

before(async () => {
  oa = await openaiFake.start({ apiKey: KEY });
  oa.setModels([{ id: 'whisper-test' }]);
  svc = await startService({ env: { SWITCHYARD_LOG_LEVEL: 'info' } });
  await svc.request('PATCH', '/v1/settings', { body: { limits: { multipartBodyBytes: 512 * MiB } } });
  await svc.request('POST', '/v1/providers', { body: { kind: 'openai', baseUrl: oa.baseUrl, credential: KEY } });
  await svc.request('POST', '/v1/providers/openai/actions/refresh-models');
});
after(async () => {
  await svc.stop();
  await oa.close();
});

function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Number(/VmRSS:\s+(\d+) kB/.exec(status)![1]) * 1024;
}

/** Streams a file-first multipart body of `mib` MiB; resolves with the answer and the file's SHA-256. */
async function upload(mib: number): Promise<{ status: number; text: string; sha256: string }> {
  const boundary = `----switchyard${randomBytes(8).toString('hex')}`;
  const block = randomBytes(MiB);
  const head = Buffer.from(
    `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="big.wav"\r\nContent-Type: ` +
      `audio/wav\r\n\r\n`,
  );
  const tail = Buffer.from(
    `\r\n--${boundary}\r\nContent-Disposition: form-data; ` +
      `name="model"\r\n\r\nopenai/whisper-test\r\n--${boundary}--\r\n`,
  );
  const expected = createHash('sha256');
  const reply = await new Promise<{ status: number; text: string }>((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port: svc.port,
        method: 'POST',
        path: '/v1/audio/transcriptions',
        headers: {
          authorization: `Bearer ${svc.adminToken}`,
          'content-type': `multipart/form-data; boundary=${boundary}`,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8').on('data', (d: string) => (text += d));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
      },
    );
    req.on('error', reject);
    let sent = 0;
    const pump = () => {
      if (sent === 0) req.write(head);
      while (sent < mib) {
        sent++;
        expected.update(block);
        if (!req.write(block)) return void req.once('drain', pump);
      }
      req.end(tail);
    };
    pump();
  });
  return { ...reply, sha256: expected.digest('hex') };
}

test('a 200 MB multipart upload keeps the service RSS growth bounded (64 MB; 96 MB on the node:http edge of ' +
  'Node 22+) ' +
  'and arrives intact', {
  skip: process.platform !== 'linux' && 'reads /proc',
}, async (t) => {
  const pid = svc.process.pid!;
  // A first, small upload warms what any upload needs once (code paths, the upstream connection, the
  // allocator's arenas in each thread), so the figure below is what holding 200 MB would cost.
  assert.equal((await upload(16)).status, 200);
  const baseline = rssBytes(pid);
  let peak = baseline;
  const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(pid))), 20);
  const reply = await upload(TOTAL_MIB).finally(() => clearInterval(sampler));

  assert.equal(reply.status, 200, reply.text);
  assert.equal(typeof JSON.parse(reply.text).text, 'string');
  const growth = peak - baseline;
  t.diagnostic(`service RSS grew by ${(growth / MiB).toFixed(1)} MB (baseline ${(baseline / MiB).toFixed(0)} MB)`);
  // On Node 22+ the node:http edge peaks higher for the same upload: measured on this machine, 43-75 MB on
  // Node 24 against 26-40 MB for the same adapter on Node 20 (21 MB for uWS in a CI run), alone and beside another
  // test file; the cause (V8's or the allocator's, not the adapter's buffering: passing the socket's chunks
  // without a copy changed nothing) is not found yet. Either bound still fails a service that holds the 200 MB.
  const nodeHttp = svc.logLines().some((l) => l.edge === 'node:http');
  const boundMiB = nodeHttp && Number(process.versions.node.split('.')[0]) >= 22 ? 96 : 64;
  assert.ok(growth < boundMiB * MiB, `RSS grew by ${Math.round(growth / MiB)} MB (bound ${boundMiB} MB)`);
  const seen = oa.requests.at(-1)!;
  const file = seen.parts!.find((p) => p.name === 'file')!;
  assert.equal(file.size, TOTAL_MIB * MiB);
  assert.equal(file.sha256, reply.sha256);
  assert.equal(
    seen.parts!.find((p) => p.name === 'model')!.value,
    'whisper-test',
    'the model is rewritten to the upstream ID',
  );
  // The spill file is removed once the upload is over, which can be just after the answer left.
  const spillDir = join(svc.home, 'tmp');
  for (let tries = 0; readdirSync(spillDir).length > 0 && tries < 250; tries++)
    await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(readdirSync(spillDir), [], 'the spill file is gone');
});
