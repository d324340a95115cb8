import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import { TOKEN_SHAPE } from '../../protocol/http/tokens.ts';
import { type FakeAgentRecord, readRecord } from './launch-agent-fake.ts';
import { CLAUDE_REMOVED, expectedEnv, type LaunchBed, startLaunchBed } from './launch-bed.ts';

// `switchyard launch` run whole against a service with fake upstreams, starting fake agents (launch-bed.ts):
// each run's environment and arguments compared exactly with what the launcher promises, its call followed to
// the fake upstream, its token followed through the API until it is revoked.

const RUN_TTL_MS = 15 * 60_000;

let bed: LaunchBed;
before(async () => {
  bed = await startLaunchBed();
});
after(() => bed?.close({ secrets: 5, printed: 0 }));

describe('claude', () => {
  test('Claude Code pointed at the service: exact environment, a call through, its exit code, revoked', async () => {
    const before = await bed.tokenIds();
    const env = bed.shell({
      CLAUDE_CODE_USE_BEDROCK: '1',
      CLAUDE_CODE_OAUTH_TOKEN: 'oauth-x',
      ANTHROPIC_SMALL_FAST_MODEL: 'x',
    });
    const calls = bed.an.requests.length;
    const run = bed.launch(
      ['claude', '--model', 'anthropic/claude-sonnet-4-5', '--', '-p', 'Say hello.', '--fake-exit', '7'],
      env,
    );
    assert.equal(await run.exited, 7, run.err());
    assert.equal(run.out(), '');
    assert.equal(run.err(), '');
    const record: FakeAgentRecord = readRecord(env.FAKE_AGENT_RECORD!);
    const secret = record.env.ANTHROPIC_AUTH_TOKEN!;
    bed.secrets.push(secret);
    assert.match(secret, TOKEN_SHAPE);
    assert.deepEqual(record.argv, ['-p', 'Say hello.', '--fake-exit', '7']);
    const model = 'anthropic/claude-sonnet-4-5';
    assert.deepEqual(
      record.env,
      expectedEnv(
        env,
        {
          ANTHROPIC_BASE_URL: bed.svc.url,
          ANTHROPIC_AUTH_TOKEN: secret,
          ENABLE_TOOL_SEARCH: 'true',
          ANTHROPIC_MODEL: model,
          ANTHROPIC_DEFAULT_OPUS_MODEL: model,
          ANTHROPIC_DEFAULT_SONNET_MODEL: model,
          ANTHROPIC_DEFAULT_HAIKU_MODEL: model,
          CLAUDE_CODE_SUBAGENT_MODEL: model,
        },
        CLAUDE_REMOVED,
      ),
    );
    // The call went through the service to the upstream, with the provider's key and not the run's token.
    assert.equal(record.call!.status, 200, JSON.stringify(record.call));
    const upstream = bed.an.requests.slice(calls).filter((r) => r.path.endsWith('/messages'));
    assert.equal(upstream.length, 1);
    assert.equal((upstream[0]!.json as { model: string }).model, 'claude-sonnet-4-5');
    assert.ok(!JSON.stringify(upstream[0]!.headers).includes(secret));
    const id = await bed.lastMinted();
    assert.ok(!before.includes(id));
    assert.deepEqual(await bed.tokenIds(), before);
    await bed.assertRevoked(id, secret);
    const revoked = await bed.svc.request('GET', `/v1/audit-events?action=token.revoke&resourceId=${id}`);
    assert.equal(revoked.json.data[0].metadata.name, `launch claude ${bed.dirName}`);
  });

  test('without --model Claude Code keeps its own model; SWITCHYARD_CLAUDE_BIN names another binary', async () => {
    const env = bed.shell({
      PATH: '/usr/bin:/bin',
      SWITCHYARD_CLAUDE_BIN: join(bed.agents, 'claude'),
      ANTHROPIC_MODEL: 'claude-sonnet-4-5',
    });
    const run = bed.launch(['claude'], env);
    assert.equal(await run.exited, 0, run.err());
    const record = readRecord(env.FAKE_AGENT_RECORD!);
    bed.secrets.push(record.env.ANTHROPIC_AUTH_TOKEN!);
    assert.deepEqual(record.argv, []);
    assert.equal(record.env.ANTHROPIC_MODEL, 'claude-sonnet-4-5');
    assert.equal(record.env.ANTHROPIC_DEFAULT_SONNET_MODEL, undefined);
    assert.equal(record.call!.status, 200);
  });
});

describe('codex', () => {
  test('starts Codex CLI with -c overrides before its own arguments and the token in env_key', async () => {
    const before = await bed.tokenIds();
    const env = bed.shell({ OPENAI_BASE_URL: 'https://api.openai.com/v1' });
    const calls = bed.oa.requests.length;
    const run = bed.launch(
      ['codex', '--model', 'openai/gpt-5-codex', '--', 'exec', '--skip-git-repo-check', 'Say hello.'],
      env,
    );
    assert.equal(await run.exited, 0, run.err());
    const record = readRecord(env.FAKE_AGENT_RECORD!);
    const secret = record.env.SWITCHYARD_LAUNCH_TOKEN!;
    bed.secrets.push(secret);
    assert.match(secret, TOKEN_SHAPE);
    assert.deepEqual(record.argv, [
      '-c',
      'model_provider="switchyard"',
      '-c',
      'model_providers.switchyard.name="Switchyard"',
      '-c',
      `model_providers.switchyard.base_url="${bed.svc.url}/v1"`,
      '-c',
      'model_providers.switchyard.env_key="SWITCHYARD_LAUNCH_TOKEN"',
      '-c',
      'model_providers.switchyard.wire_api="responses"',
      '-c',
      'model_providers.switchyard.supports_websockets=true',
      '-c',
      'model="openai/gpt-5-codex"',
      'exec',
      '--skip-git-repo-check',
      'Say hello.',
    ]);
    assert.deepEqual(
      record.env,
      expectedEnv(env, { SWITCHYARD_LAUNCH_TOKEN: secret }, ['OPENAI_API_KEY', 'OPENAI_BASE_URL']),
    );
    assert.equal(record.call!.status, 200, JSON.stringify(record.call));
    assert.equal(record.call!.url, `${bed.svc.url}/v1/responses`);
    const upstream = bed.oa.requests.slice(calls).filter((r) => r.path.endsWith('/responses'));
    assert.equal(upstream.length, 1);
    assert.equal((upstream[0]!.json as { model: string }).model, 'gpt-5-codex');
    assert.deepEqual(await bed.tokenIds(), before);
    await bed.assertRevoked(await bed.lastMinted(), secret);
  });
});

describe('while the agent runs', () => {
  test('--usd puts a month dollar limit on the token; SIGTERM reaches the agent; both are gone after', async () => {
    const env = bed.shell();
    const run = bed.launch(['codex', '--usd', '2.50', '--', '--fake-wait'], env);
    await run.until('out', /^ready$/m);
    const id = await bed.lastMinted();
    const token = (await bed.svc.request('GET', `/v1/tokens/${id}`)).json;
    assert.equal(token.name, `launch codex ${bed.dirName}`);
    assert.deepEqual(token.scopes, ['inference']);
    const ttl = Date.parse(token.expiresAt) - Date.parse(token.createdAt);
    assert.ok(Math.abs(ttl - RUN_TTL_MS) < 5_000, `expires ${ttl} ms after its creation`);
    const limits = (await bed.svc.request('GET', '/v1/limits')).json.data.filter(
      (l: { scope: { id: string } }) => l.scope.id === id,
    );
    assert.equal(limits.length, 1);
    assert.deepEqual(
      {
        name: limits[0].name,
        scope: limits[0].scope,
        window: limits[0].window,
        metric: limits[0].metric,
        max: limits[0].max,
      },
      {
        name: `launch codex ${bed.dirName} ($2.50)`,
        scope: { kind: 'token', id },
        window: 'month',
        metric: 'usd',
        max: 2.5,
      },
    );
    process.kill(run.pid, 'SIGTERM');
    assert.equal(await run.exited, 128 + 15, run.err());
    const record = readRecord(env.FAKE_AGENT_RECORD!);
    bed.secrets.push(record.env.SWITCHYARD_LAUNCH_TOKEN!);
    assert.deepEqual(record.signals, ['SIGTERM']);
    assert.equal((await bed.svc.request('GET', `/v1/limits/${limits[0].id}`)).status, 404);
    await bed.assertRevoked(id, record.env.SWITCHYARD_LAUNCH_TOKEN!);
  });

  test('the expiry moves forward on each tick; a failed extension or revocation warns and ends nothing', async () => {
    const env = bed.shell({ SWITCHYARD_LAUNCH_RENEW_MS: '100' });
    const run = bed.launch(['claude', '--', '--fake-wait'], env);
    await run.until('out', /^ready$/m);
    const id = await bed.lastMinted();
    const isExtension = (l: Record<string, unknown>) => l.route === 'PATCH /v1/tokens/:id';
    const extended = (count: number) =>
      bed.svc.waitForLog((l) => isExtension(l) && bed.svc.logLines().filter(isExtension).length >= count, 10_000);
    const seen = bed.svc.logLines().filter(isExtension).length;
    await extended(seen + 1);
    const first = (await bed.svc.request('GET', `/v1/tokens/${id}`)).json.expiresAt as string;
    await extended(bed.svc.logLines().filter(isExtension).length + 1);
    const second = (await bed.svc.request('GET', `/v1/tokens/${id}`)).json.expiresAt as string;
    assert.ok(Date.parse(second) > Date.parse(first), `${second} after ${first}`);
    // Revoked behind its back: the next extensions fail, each said on stderr, and the agent runs on.
    assert.equal((await bed.svc.request('DELETE', `/v1/tokens/${id}`)).status, 200);
    await run.until('err', /could not extend token tok_\w+ \(.*\); trying again on the next tick/);
    await run.until('err', /could not extend[^\n]*\n[^\n]*could not extend/);
    process.kill(run.pid, 'SIGINT');
    assert.equal(await run.exited, 128 + 2);
    const record = readRecord(env.FAKE_AGENT_RECORD!);
    bed.secrets.push(record.env.ANTHROPIC_AUTH_TOKEN!);
    assert.deepEqual(record.signals, ['SIGINT']);
    assert.match(run.err(), new RegExp(`could not revoke token ${id} \\(.*\\); it expires on its own at `));
  });
});
