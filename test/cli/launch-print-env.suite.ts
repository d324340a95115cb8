import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { after, before, describe, test } from 'node:test';
import { tempHome } from '../helpers/service.ts';
import { readRecord } from './launch-agent-fake.ts';
import { CLAUDE_REMOVED, type LaunchBed, startLaunchBed } from './launch-bed.ts';

// `switchyard launch --print-env`, and what launch does before it starts an agent: exit 1, 2 and 3, and a
// dollar limit the service refuses. Against a service with fake upstreams and fake agents (launch-bed.ts).

let bed: LaunchBed;
before(async () => {
  bed = await startLaunchBed();
});
after(() => bed?.close({ secrets: 0, printed: 3 }));

describe('--print-env', () => {
  test('Claude Code: export and unset lines on stdout; the token (12 hours) works and is not revoked', async () => {
    const run = bed.launch(['claude', '--print-env', '--model', 'claude-sonnet-4-5'], bed.shell());
    assert.equal(await run.exited, 0, run.err());
    const secret = /^export ANTHROPIC_AUTH_TOKEN=(sk-svc-[\w-]{43})$/m.exec(run.out())?.[1];
    assert.ok(secret, run.out());
    bed.printedSecrets.push(secret);
    const m = 'claude-sonnet-4-5';
    assert.equal(
      run.out(),
      [
        `export ANTHROPIC_BASE_URL=${bed.svc.url}`,
        `export ANTHROPIC_AUTH_TOKEN=${secret}`,
        'export ENABLE_TOOL_SEARCH=true',
        ...['ANTHROPIC_MODEL', 'ANTHROPIC_DEFAULT_OPUS_MODEL', 'ANTHROPIC_DEFAULT_SONNET_MODEL'].map(
          (v) => `export ${v}=${m}`,
        ),
        ...['ANTHROPIC_DEFAULT_HAIKU_MODEL', 'CLAUDE_CODE_SUBAGENT_MODEL'].map((v) => `export ${v}=${m}`),
        `unset ${CLAUDE_REMOVED.join(' ')}`,
        '',
      ].join('\n'),
    );
    const id = await bed.lastMinted();
    assert.ok(!run.err().includes(secret));
    assert.match(run.err(), new RegExp(`^Token ${id} \\("launch claude ${bed.dirName}", inference\\) expires at `));
    assert.match(run.err(), /With these set, run Claude Code:\n {2}claude\n$/);
    const token = (await bed.svc.request('GET', `/v1/tokens/${id}`)).json;
    const ttl = Date.parse(token.expiresAt) - Date.parse(token.createdAt);
    assert.ok(Math.abs(ttl - 12 * 3_600_000) < 5_000, `expires ${ttl} ms after its creation`);
    const call = await bed.svc.request('POST', '/v1/messages', {
      token: secret,
      body: { model: m, max_tokens: 8, messages: [{ role: 'user', content: 'hi' }] },
    });
    assert.equal(call.status, 200, call.text);
  });

  test('Codex CLI: a shell given stdout, then the command line from stderr, runs Codex as launch does', async () => {
    const env = bed.shell();
    const run = bed.launch(
      ['codex', '--print-env', '--model', "it's/model", '--', 'exec', 'Say "hi".', '--fake-exit', '3'],
      env,
    );
    assert.equal(await run.exited, 0, run.err());
    const secret = /^export SWITCHYARD_LAUNCH_TOKEN=(sk-svc-[\w-]{43})$/m.exec(run.out())?.[1];
    assert.ok(secret, run.out());
    bed.printedSecrets.push(secret);
    assert.equal(run.out(), `export SWITCHYARD_LAUNCH_TOKEN=${secret}\nunset OPENAI_API_KEY OPENAI_BASE_URL\n`);
    const command = /With these set, run Codex CLI:\n {2}(codex .*)\n$/.exec(run.err())?.[1];
    assert.ok(command, run.err());
    const shellRun = spawn('bash', ['-c', `${run.out()}${command}`], { env, stdio: 'ignore' });
    assert.equal(await new Promise((resolve) => shellRun.on('close', resolve)), 3);
    const record = readRecord(env.FAKE_AGENT_RECORD!);
    assert.deepEqual(record.argv.slice(-6), ['-c', `model="it's/model"`, 'exec', 'Say "hi".', '--fake-exit', '3']);
    assert.equal(record.env.SWITCHYARD_LAUNCH_TOKEN, secret);
    assert.equal(record.env.OPENAI_API_KEY, undefined);
    // The call reached the service, which found no model of that name: the token and the URL were right.
    assert.equal(record.call!.url, `${bed.svc.url}/v1/responses`);
    assert.equal(record.call!.status, 404, JSON.stringify(record.call));
    const json = bed.launch(['codex', '--print-env', '--json'], env);
    assert.equal(await json.exited, 0, json.err());
    const answer = JSON.parse(json.out());
    bed.printedSecrets.push(answer.secret);
    assert.deepEqual(Object.keys(answer), ['token', 'secret', 'limit', 'set', 'unset', 'command']);
    assert.equal(answer.set.SWITCHYARD_LAUNCH_TOKEN, answer.secret);
    assert.equal(answer.command[0], 'codex');
    assert.equal(answer.command.length, 13);
  });
});

describe('before the agent', () => {
  test('no agent binary: exit 1 naming it, and no token is minted', async () => {
    const before = await bed.lastMinted();
    const run = bed.launch(['codex'], bed.shell({ PATH: '/usr/bin:/bin' }));
    assert.equal(await run.exited, 1);
    assert.match(
      run.err(),
      /^switchyard launch: Codex CLI \(`codex`\) was not found on PATH\. .*SWITCHYARD_CODEX_BIN\.\n$/,
    );
    assert.equal(await bed.lastMinted(), before);
  });

  test('no service: exit 3, and the agent is not started', async () => {
    const env = bed.shell({ SWITCHYARD_HOME: tempHome() });
    const run = bed.launch(['claude'], env);
    assert.equal(await run.exited, 3);
    assert.match(run.err(), /^switchyard launch: No running Switchyard service found\./);
    assert.throws(() => readRecord(env.FAKE_AGENT_RECORD!), /ENOENT/);
  });

  test('bad usage: exit 2 with the message, before anything else', async () => {
    const run = bed.launch(['claude', '--usd', '-3'], bed.shell({ SWITCHYARD_HOME: tempHome() }));
    assert.equal(await run.exited, 2);
    assert.equal(run.err(), 'switchyard launch: --usd takes a dollar amount above 0 (such as 5 or 2.50), not "-3".\n');
  });
});

describe('a limit the service refuses', () => {
  test('--usd when no limit fits: exit 1 with the service reason, and the minted token is revoked again', async () => {
    const have = (await bed.svc.request('GET', '/v1/limits')).json.data.length as number;
    const made: string[] = [];
    for (let i = have; i < 200; i++) {
      const r = await bed.svc.request('POST', '/v1/limits', {
        body: { name: `filler ${i}`, scope: { kind: 'service' }, window: 'minute', metric: 'requests', max: 1e9 },
      });
      assert.equal(r.status, 201, r.text);
      made.push(r.json.id);
    }
    try {
      const before = await bed.tokenIds();
      const env = bed.shell();
      const run = bed.launch(['claude', '--usd', '5'], env);
      assert.equal(await run.exited, 1);
      assert.match(run.err(), /^switchyard launch: Could not set the --usd limit: .+\n$/);
      const id = await bed.lastMinted();
      assert.ok(!before.includes(id));
      assert.deepEqual(await bed.tokenIds(), before);
      assert.throws(() => readRecord(env.FAKE_AGENT_RECORD!), /ENOENT/, 'the agent was started');
    } finally {
      for (const id of made) await bed.svc.request('DELETE', `/v1/limits/${id}`);
    }
  });
});
