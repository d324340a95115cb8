import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, test } from 'node:test';
import OpenAI from 'openai';
import * as openaiFake from '../fakes/openai.ts';
import { UWS_ENV } from '../helpers/edge-threads.ts';
import { assertSecretsNowhere, startService, tempHome, type TestService } from '../helpers/service.ts';

// kill -9 in the middle of a run of official-SDK calls loses no usage that a client saw settled (docs/api.md,
// Usage, "What survives a crash"): the meter commits its aggregates a quarter of a second behind, and the usage
// journal holds every record from before the answer's last bytes until its commit. The process is what is under
// test here, so the service is a real one, killed for real.

const CLIENTS = 8;
/** Calls answered before the kill: a few commit periods' worth, so that some surely wait for their commit. */
const BEFORE_KILL = 300;

const variants: [string, Record<string, string>][] = [
  ['one edge thread', {}],
  ['two edge threads', { SWITCHYARD_EDGE_THREADS: '2', ...UWS_ENV }],
];

describe('usage across kill -9', () => {
  for (const [label, env] of variants)
    test(`every call a client saw answered is metered after the restart (${label})`, async () => {
      const KEY = `fake-openai-key-${process.pid}`;
      const oa = await openaiFake.start({ apiKey: KEY });
      oa.setModels([{ id: 'gpt-crash' }]);
      oa.setUsage({ inputTokens: 10, outputTokens: 5 });
      const home = tempHome();
      const first = await startService({ home, env });
      let second: TestService | undefined;
      try {
        const made = async (path: string, body: unknown) => {
          const reply = await first.request('POST', path, { body });
          assert.equal(reply.status, 201, reply.text);
          return reply;
        };
        await made('/v1/providers', { id: 'oa', kind: 'openai', baseUrl: oa.baseUrl, credential: KEY });
        assert.equal((await first.request('POST', '/v1/providers/oa/actions/refresh-models')).status, 200);
        const created = await made('/v1/tokens', { name: 'agent', scopes: ['inference'] });
        first.markSecretBearing(created);
        const secret = created.json.secret as string;

        let answered = 0;
        let reached!: () => void;
        const enough = new Promise<void>((resolve) => (reached = resolve));
        const loops = Array.from({ length: CLIENTS }, async () => {
          const client = new OpenAI({ baseURL: `${first.url}/v1`, apiKey: secret, maxRetries: 0 });
          for (;;) {
            try {
              await client.chat.completions.create({
                model: 'oa/gpt-crash',
                messages: [{ role: 'user', content: 'hi' }],
              });
            } catch {
              return; // The service is gone.
            }
            if (++answered === BEFORE_KILL) reached();
          }
        });
        await enough;
        await first.kill9();
        await Promise.all(loops);
        const sent = oa.requests.filter((r) => r.path.endsWith('/chat/completions')).length;
        const left = readdirSync(join(home, 'usage-journal'));
        assert.ok(left.length > 0, 'the killed service left its journal behind');
        // Where two threads served (on uWebSockets.js), each kept its own.
        const uws = first.logLines().some((l) => l.msg === 'native uWebSockets.js binary loaded');
        if (env.SWITCHYARD_EDGE_THREADS === '2' && uws)
          assert.ok(
            left.some((name) => name.includes('-edge1-')),
            left.join(' '),
          );

        second = await startService({ home });
        const summary = (await second.request('GET', '/v1/usage/summary')).json;
        const metered = summary.totals.requests as number;
        // Calls in flight at the kill may have settled without their client seeing the answer: at most those more.
        assert.ok(metered >= answered, `${metered} metered of ${answered} answered`);
        assert.ok(metered <= sent, `${metered} metered of ${sent} sent upstream`);
        assert.equal(summary.totals.inputTokens, 10 * metered);
        assert.equal(summary.totals.outputTokens, 5 * metered);
        // The meter logs its replay from its own thread: the line may reach the file after the summary's answer.
        const line = await second.waitForLog(
          (l) => l.msg === 'usage of calls before an unclean stop metered from its journal',
          20_000,
        );
        assert.ok((line.records as number) > 0, 'the journal had what the store had not');
        assert.equal(await second.stop(), 0);
        assert.deepEqual(readdirSync(join(home, 'usage-journal')), [], 'a clean stop leaves no journal');
        for (const svc of [first, second]) assertSecretsNowhere(svc, [secret, KEY]);
      } finally {
        await first.kill9();
        await second?.stop();
        await oa.close();
      }
    });
});
