import assert from 'node:assert/strict';
import { spawn, spawnSync, type SpawnSyncReturns } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { after, before, describe, test } from 'node:test';
import OpenAI from 'openai';
import * as openaiFake from '../fakes/openai.ts';
import { bytes } from '../../cli/output.ts';
import { addProvider } from '../helpers/gateway.ts';
import { writeTinyModel } from '../helpers/gguf.ts';
import { serviceBin, shellEnv, startService, tempHome, type TestService } from '../helpers/service.ts';

// The commands a person types against a running service, run as that person runs them (the executable, a
// separate process, the data directory found from the service's instance file), each compared with what
// the API answers for the same question. The progress bar is read off a pseudo-terminal (util-linux script).

let svc: TestService;
let fake: openaiFake.OpenAIFake;
let env: NodeJS.ProcessEnv;
const bin = () => serviceBin();

function cli(args: string[], extraEnv: NodeJS.ProcessEnv = {}): SpawnSyncReturns<string> {
  const r = spawnSync(process.execPath, [bin(), ...args], {
    env: { ...env, ...extraEnv },
    encoding: 'utf8',
    timeout: 60_000,
  });
  for (const text of [r.stdout, r.stderr])
    assert.ok(!text.includes(svc.adminToken), `the CLI printed the admin token: ${args.join(' ')}`);
  return r;
}

function ok(args: string[]): string {
  const r = cli(args);
  assert.equal(r.status, 0, `switchyard ${args.join(' ')}: ${r.stderr}`);
  return r.stdout;
}

/** A command run inside a pseudo-terminal, so stdout is a TTY: what a person sees, carriage returns and all. */
function inPty(args: string[]): SpawnSyncReturns<string> {
  const quoted = [process.execPath, bin(), ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
  return spawnSync('script', ['-qfec', quoted, '/dev/null'], {
    env: { ...env, TERM: 'dumb' },
    encoding: 'utf8',
    timeout: 60_000,
  });
}

/** Starts a long-running command; resolves lines of its stderr and stdout as they come. */
function background(args: string[]) {
  const child = spawn(process.execPath, [bin(), ...args], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  const waiters: { test(): boolean; resolve(): void }[] = [];
  const wake = () => waiters.splice(0).forEach((w) => (w.test() ? w.resolve() : waiters.push(w)));
  child.stdout.setEncoding('utf8').on('data', (d: string) => ((out += d), wake()));
  child.stderr.setEncoding('utf8').on('data', (d: string) => ((err += d), wake()));
  const exited = new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code)));
  return {
    child,
    out: () => out,
    err: () => err,
    exited,
    until(pattern: RegExp, where: 'out' | 'err' = 'err'): Promise<RegExpMatchArray> {
      const read = () => (where === 'out' ? out : err).match(pattern);
      return new Promise((resolve, reject) => {
        const found = read();
        if (found) return resolve(found);
        // A command that never says it must fail the test, not hang it.
        const timer = setTimeout(() => reject(new Error(`no ${pattern} within 30 s: ${err}${out}`)), 30_000);
        waiters.push({ test: () => read() !== null, resolve: () => (clearTimeout(timer), resolve(read()!)) });
        child.on(
          'close',
          () => (
            clearTimeout(timer),
            read() ? resolve(read()!) : reject(new Error(`exited without ${pattern}: ${err}${out}`))
          ),
        );
      });
    },
  };
}

before(async () => {
  const home = tempHome();
  mkdirSync(join(home, 'models'), { recursive: true });
  writeTinyModel(join(home, 'models', 'tiny.gguf'));
  fake = await openaiFake.start();
  fake.setModels([{ id: 'gpt-cli' }, { id: 'gpt-hidden' }]);
  fake.setOutput({ text: 'hello from the fake', chunks: 2 });
  svc = await startService({ home });
  // The commands find the service as a person's shell would: its data directory and instance file.
  env = shellEnv(home);
  const patched = await svc.request('PATCH', '/v1/settings', {
    body: { runtime: { tuning: { contextSize: 256, threads: 1, parallel: 1 } } },
  });
  assert.equal(patched.status, 200, patched.text);
  assert.equal(
    await addProvider(svc, {
      id: 'hosted',
      kind: 'openai',
      baseUrl: fake.baseUrl,
      credential: `sk-cli-${process.pid}`,
    }),
    2,
  );
  const openai = new OpenAI({ baseURL: `${svc.url}/v1`, apiKey: svc.adminToken, maxRetries: 0 });
  await openai.chat.completions.create({ model: 'hosted/gpt-cli', messages: [{ role: 'user', content: 'hi' }] });
});
after(async () => {
  await svc?.stop();
  await fake?.close();
});

describe('listing commands', () => {
  test('providers: --json is the API answer; the table has a row per provider', async () => {
    assert.deepEqual(JSON.parse(ok(['providers', '--json'])), (await svc.request('GET', '/v1/providers')).json);
    const table = ok(['providers']).split('\n');
    assert.match(table[0]!, /^ID\s+KIND\s+ENABLED\s+CREDENTIAL\s+BASE URL$/);
    assert.ok(
      table.some((l) => /^hosted\s+openai\s+yes\s+set\s+http:\/\/127\.0\.0\.1:\d+\/v1$/.test(l)),
      table.join('\n'),
    );
    assert.ok(
      table.some((l) => /^embedded\s+embedded\s+yes\s+none/.test(l)),
      table.join('\n'),
    );
  });

  test('models: hidden ones only with --all, flagged', async () => {
    const hid = await svc.request('PATCH', `/v1/catalog/models/${encodeURIComponent('hosted/gpt-hidden')}`, {
      body: { hidden: true },
    });
    assert.equal(hid.status, 200, hid.text);
    assert.deepEqual(
      JSON.parse(ok(['models', '--json'])),
      (await svc.request('GET', '/v1/catalog/models?hidden=false')).json,
    );
    const shown = ok(['models']);
    assert.match(shown, /^ID\s+PROVIDER\s+SOURCE\s+CONTEXT\s+PRICE IN \/ OUT PER MTOK\s+ALIASES$/m);
    // gpt-cli is in no price database and has no catalog price.
    assert.match(shown, /^hosted\/gpt-cli\s+hosted\s+auto\s+\S+\s+no price/m);
    assert.doesNotMatch(shown, /gpt-hidden/);
    assert.match(ok(['models', '--all']), /^hosted\/gpt-hidden\s+hosted\s+explicit\s+.*hidden$/m);
  });

  test('usage: the summary and breakdown the API gives for the same days', async () => {
    const answer = JSON.parse(ok(['usage', '--json', '--days', '7', '--by', 'provider']));
    const range = `from=${answer.summary.from}&to=${answer.summary.to}`;
    assert.deepEqual(answer.summary, (await svc.request('GET', `/v1/usage/summary?${range}`)).json);
    assert.deepEqual(
      answer.breakdown,
      (await svc.request('GET', `/v1/usage/breakdown?${range}&groupBy=provider`)).json,
    );
    assert.equal(answer.summary.totals.requests, 1);
    const table = ok(['usage', '--by', 'provider']);
    assert.match(table, /^hosted\s+1\s.*\sno price$/m);
    assert.match(table, /tokens, no price\n/);
    // Provider and model in two columns, each model under MODEL.
    const byBoth = ok(['usage', '--by', 'provider_model']).split('\n');
    const header = byBoth.find((l) => l.startsWith('PROVIDER'))!;
    assert.match(header, /^PROVIDER\s+MODEL\s+REQUESTS/);
    const row = byBoth.find((l) => l.startsWith('hosted '))!;
    assert.equal(row.indexOf('hosted/gpt-cli'), header.indexOf('MODEL'));
    // By provider key: the key that served the call, by its ID, under KEY.
    const [key] = (await svc.request('GET', '/v1/providers/hosted/credentials')).json.data;
    const byKey = ok(['usage', '--by', 'credential']).split('\n');
    const keyHeader = byKey.find((l) => l.startsWith('PROVIDER'))!;
    assert.match(keyHeader, /^PROVIDER\s+KEY\s+REQUESTS/);
    const keyRow = byKey.find((l) => l.startsWith('hosted '))!;
    assert.equal(keyRow.indexOf(key.id), keyHeader.indexOf('KEY'));
    assert.match(keyRow, /\s1\s/);
  });

  test('usage by token: names, the ID beside them in --json; a revoked token keeps its ID', async () => {
    const created = await svc.request('POST', '/v1/tokens', { body: { name: 'gone soon', scopes: ['inference'] } });
    svc.markSecretBearing(created);
    const openai = new OpenAI({ baseURL: `${svc.url}/v1`, apiKey: created.json.secret, maxRetries: 0 });
    await openai.chat.completions.create({ model: 'hosted/gpt-cli', messages: [{ role: 'user', content: 'hi' }] });
    assert.equal((await svc.request('DELETE', `/v1/tokens/${created.json.token.id}`)).status, 200);
    // The meter commits in batches (every 250 ms): the call is read back once it is counted.
    // Days are the service's local days: a range around today in any time zone.
    const day = (offset: number) => new Date(Date.now() + offset * 86_400_000).toISOString().slice(0, 10);
    const counted = async () =>
      (await svc.request('GET', `/v1/usage/breakdown?from=${day(-1)}&to=${day(1)}&groupBy=token`)).json.data.some(
        (r: { tokenId: string }) => r.tokenId === created.json.token.id,
      );
    for (let i = 0; i < 200 && !(await counted()); i++) await new Promise((r) => setTimeout(r, 50));
    const rows = JSON.parse(ok(['usage', '--json', '--by', 'token'])).breakdown.data;
    const admin = rows.find((r: { tokenName: string | null }) => r.tokenName === 'bootstrap admin');
    assert.match(admin.tokenId, /^tok_/);
    const revoked = rows.find((r: { tokenId: string }) => r.tokenId === created.json.token.id);
    assert.equal(revoked.tokenName, null);
    const shown = ok(['usage', '--by', 'token']);
    assert.match(shown, /^TOKEN\s+REQUESTS/m);
    assert.match(shown, /^bootstrap admin\s+\d/m);
    assert.match(shown, new RegExp(`^${created.json.token.id} \\(revoked\\)\\s+1\\s`, 'm'));
    assert.ok(!shown.includes(admin.tokenId), 'a known token shows its name, not its ID');
  });
});

describe('jobs and loaded models', () => {
  let jobId = '';

  test('models load draws a progress bar on a terminal and ends done', () => {
    const r = inPty(['models', 'load', 'embedded/tiny.gguf']);
    assert.equal(r.status, 0, r.stdout);
    assert.match(r.stdout, /\rLoading embedded\/tiny\.gguf \[-+\]\s+0%/);
    assert.match(r.stdout, /\rLoading embedded\/tiny\.gguf \[#{30}\] 100%\r?\n/);
    assert.match(r.stdout.trimEnd().split('\n').at(-1)!, /^Loading embedded\/tiny\.gguf: done\r?$/);
    // Loading it again has nothing to show: no bar, one line.
    const again = inPty(['models', 'load', 'embedded/tiny.gguf']);
    assert.equal(again.status, 0, again.stdout);
    assert.doesNotMatch(again.stdout, /\[|%/);
    assert.equal(again.stdout.trim(), 'embedded/tiny.gguf is already loaded.');
  });

  test('ps: the loaded model, as /v1/runtime/loaded says', async () => {
    const loaded = (await svc.request('GET', '/v1/runtime/loaded')).json;
    assert.deepEqual(JSON.parse(ok(['ps', '--json'])), loaded);
    assert.equal(loaded.data.length, 1);
    // Sizes in binary units, as the dashboard shows them.
    assert.match(ok(['ps']), /^embedded\/tiny\.gguf\s+embedded\s+\d+(\.\d)? (B|KiB|MiB|GiB)\s+CPU\s+256\s/m);
  });

  test('services: the embedded runtime with the model it holds, as /v1/services says', async () => {
    assert.deepEqual(JSON.parse(ok(['services', '--json'])), (await svc.request('GET', '/v1/services')).json);
    assert.match(ok(['services']), /^embedded\s+embedded\s+running\s+1 loaded\s+-\s+0\s+-$/m);
  });

  test('jobs: the list the API gives; watch of a finished job says how it ended', async () => {
    const listed = JSON.parse(ok(['jobs', '--json']));
    assert.deepEqual(listed, (await svc.request('GET', '/v1/jobs')).json);
    jobId = listed.data[0].id;
    assert.match(ok(['jobs']), new RegExp(`^${jobId}\\s+load\\s+embedded/tiny\\.gguf\\s+succeeded\\s+100%`, 'm'));
    assert.equal(JSON.parse(ok(['jobs', 'watch', jobId, '--json'])).state, 'succeeded');
  });

  test('off a terminal, unload prints plain lines; a failing action exits 1 with the reason', async () => {
    const out = ok(['models', 'unload', 'embedded/tiny.gguf']);
    assert.doesNotMatch(out, /\r/);
    assert.equal(out.trimEnd().split('\n').at(-1), 'Unloading embedded/tiny.gguf: done');
    assert.deepEqual((await svc.request('GET', '/v1/runtime/loaded')).json.data, []);
    const missing = cli(['models', 'load', 'embedded/absent.gguf']);
    assert.equal(missing.status, 1);
    assert.match(missing.stderr, /^switchyard models: .*absent\.gguf/m);
  });
});

describe('pins and keep-alives', () => {
  const TINY = 'embedded/tiny.gguf';
  const residency = async () => (await svc.request('GET', `/v1/runtime/residency/${encodeURIComponent(TINY)}`)).json;

  test('models pin and unpin: the pin the API then reports', async () => {
    assert.equal(
      ok(['models', 'pin', TINY]),
      `${TINY}: pinned, keep-alive default (runtime.keepAliveSeconds). Not loaded.\n`,
    );
    assert.deepEqual((await residency()).prefs, { modelId: TINY, pinned: true, keepAliveSeconds: null });
    assert.deepEqual(JSON.parse(ok(['models', 'unpin', TINY, '--json'])), await residency());
    assert.equal((await residency()).prefs.pinned, false);
  });

  test('models keep-alive: seconds of its own, -1, then back to the default', async () => {
    assert.match(ok(['models', 'keep-alive', TINY, '60']), /^embedded\/tiny\.gguf: not pinned, keep-alive 60 s\. /);
    assert.equal((await residency()).prefs.keepAliveSeconds, 60);
    // -1 is a value, not an option.
    assert.match(ok(['models', 'keep-alive', TINY, '-1']), /keep-alive never unloads\./);
    assert.equal((await residency()).prefs.keepAliveSeconds, -1);
    assert.deepEqual(JSON.parse(ok(['models', 'keep-alive', '--json', TINY, 'default'])), await residency());
    assert.deepEqual((await residency()).prefs, { modelId: TINY, pinned: false, keepAliveSeconds: null });
  });

  test('models resident: the budget, and why each resident model stays', async () => {
    ok(['models', 'load', TINY]);
    const list = async () => (await svc.request('GET', '/v1/runtime/residency')).json;
    const budget = (m: { heldBytes: number; budgetBytes: number; budgetSource: string }) =>
      `Memory: held ${bytes(m.heldBytes)} of ${bytes(m.budgetBytes)} (${m.budgetSource}), 0 loads queued.\n\n`;
    // Loaded by an action, without a session: nothing keeps it warm.
    let shown = ok(['models', 'resident']);
    const before = await list();
    assert.deepEqual(before.data[0].warm, []);
    assert.ok(shown.startsWith(budget(before.memory)), shown);
    assert.match(shown, /^MODEL\s+RUNTIME\s+SIZE\s+STATE\s+WARM\s+PINNED\s+COLD$/m);
    assert.match(shown, /^embedded\/tiny\.gguf\s+embedded\s+\d+(\.\d)? (B|KiB|MiB|GiB)\s+resident\s+cold\s+no\s+-$/m);
    ok(['models', 'pin', TINY]);
    shown = ok(['models', 'resident']);
    assert.deepEqual((await list()).data[0].warm, ['pinned']);
    assert.match(shown, /^embedded\/tiny\.gguf\s+embedded\s+\S+ \S+\s+resident\s+pinned\s+yes\s+-$/m);
    assert.deepEqual(JSON.parse(ok(['models', 'resident', '--json'])), await list());
    assert.match(ok(['models', 'unpin', TINY]), /: not pinned, .* Loaded, cold\.$/m);
    ok(['models', 'unload', TINY]);
    assert.equal(ok(['models', 'resident']).split('\n').at(-2), 'No local model is resident.');
  });

  test("an unknown model exits 1 with the service's reason; bad SECONDS is bad usage, sent nowhere", async () => {
    const unknown = cli(['models', 'pin', 'embedded/absent.gguf']);
    assert.equal(unknown.status, 1);
    assert.equal(unknown.stderr, 'switchyard models: No catalog model with ID `embedded/absent.gguf`.\n');
    // With no service to reach, a bad value still exits 2, not 3: it was refused before any lookup.
    for (const seconds of ['soon', '-2', '604801', '1.5']) {
      const r = cli(['models', 'keep-alive', TINY, seconds], { SWITCHYARD_HOME: tempHome() });
      assert.equal(r.status, 2, `${seconds}: ${r.stderr}`);
      assert.match(r.stderr, /^switchyard models: SECONDS must be a whole number from -1 \(never unload\) to 604800/);
    }
    for (const args of [
      ['models', 'pin'],
      ['models', 'unpin', TINY, 'x'],
      ['models', 'resident', TINY],
    ]) {
      const r = cli(args);
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /^switchyard models: Usage: switchyard models /);
    }
    assert.deepEqual((await residency()).prefs, { modelId: TINY, pinned: false, keepAliveSeconds: null });
  });
});

describe('logs', () => {
  test('the newest lines hold a request made just before', async () => {
    await svc.request('GET', '/v1/jobs/job_00000000000000000000000000');
    await svc.waitForLog((l) => l.msg === 'request' && l.route === 'GET /v1/jobs/:id' && l.status === 404);
    const lines = ok(['logs', '--json', '-n', '20'])
      .trimEnd()
      .split('\n')
      .map((l) => JSON.parse(l));
    assert.ok(lines.length <= 20);
    assert.ok(
      lines.some((l) => l.msg === 'request' && l.route === 'GET /v1/jobs/:id' && l.status === 404),
      JSON.stringify(lines),
    );
    assert.match(ok(['logs', '-n', '5']), /info\s+request\s+.*route=GET \/v1\/jobs\/:id/);
  });

  test('--follow prints lines logged after it started', async () => {
    const follower = background(['logs', '--follow', '--json', '-n', '1']);
    try {
      await follower.until(/\n/, 'out');
      await svc.request('GET', '/v1/jobs/job_FOLLOWED0000000000000000000');
      await follower.until(/"route":"GET \/v1\/jobs\/:id","status":404/, 'out');
      const later = follower
        .out()
        .trimEnd()
        .split('\n')
        .slice(1)
        .map((l) => JSON.parse(l));
      assert.ok(later.some((l) => l.route === 'GET /v1/jobs/:id' && l.status === 404));
      assert.ok(!later.some((l) => l.route === 'GET /v1/logs'), 'the follower prints its own polls');
    } finally {
      follower.child.kill();
      await follower.exited;
    }
  });

  test('GET /v1/logs: bad queries are 400, a non-admin token 403', async () => {
    for (const q of [
      'limit=0',
      'limit=1001',
      'limit=x',
      'after=-1',
      'after=1e3',
      'after=99999999999999999999',
      'level=info',
      'limit=1&limit=2',
    ]) {
      const r = await svc.request('GET', `/v1/logs?${q}`);
      assert.equal(r.status, 400, `${q}: ${r.text}`);
      assert.equal(r.json.error.code, 'INVALID_REQUEST');
    }
    const reader = await svc.request('POST', '/v1/tokens', { body: { name: 'log-reader', scopes: ['read'] } });
    svc.markSecretBearing(reader);
    assert.equal((await svc.request('GET', '/v1/logs', { token: reader.json.secret })).status, 403);
    const page = await svc.request('GET', '/v1/logs?after=0&limit=2');
    assert.equal(page.json.data.length, 2);
    assert.equal(page.json.hasMore, true);
    assert.deepEqual(
      page.json.data.map((l: { seq: number }) => l.seq),
      [1, 2],
    );
  });
});

describe('pairing from the command line', () => {
  test('pair waits, approve lets it through, and the token it prints works', async () => {
    const pairing = background(['pair', '--name', 'cli-app', '--scopes', 'inference,read']);
    const [, code] = await pairing.until(/Pairing request (\w{4}-\w{4}) /);
    assert.match(ok(['approve']), new RegExp(`^${code}\\s+cli-app\\s+inference,read\\s`, 'm'));
    const approved = JSON.parse(ok(['approve', code!.toLowerCase(), '--json', '--scopes', 'inference']));
    assert.deepEqual(approved.token.scopes, ['inference']);
    assert.equal(await pairing.exited, 0);
    const again = cli(['approve', code!]);
    assert.equal(again.status, 1);
    assert.equal(again.stderr, `switchyard approve: Pairing request ${code} was already approved.\n`);
    const secret = pairing.out().trim();
    assert.ok(!pairing.err().includes(secret), 'the secret goes to stdout only');
    assert.equal((await svc.request('GET', '/v1/models', { token: secret })).status, 200);
    assert.equal((await svc.request('GET', '/v1/providers', { token: secret })).status, 403);
  });

  test('a denied request exits 1 and prints no token', async () => {
    const pairing = background(['pair', '--name', 'unwanted']);
    const [, code] = await pairing.until(/Pairing request (\w{4}-\w{4}) /);
    // The result on stdout, as every command's answer.
    assert.equal(ok(['approve', code!, '--deny']), `Denied ${code} ("unwanted").\n`);
    assert.equal(await pairing.exited, 1);
    assert.equal(pairing.out(), '');
    assert.match(pairing.err(), /denied/);
    const none = cli(['approve', 'ZZZZ-ZZZZ']);
    assert.equal(none.status, 1);
  });
});

describe('service install', () => {
  test('writes a systemd user unit that runs the build as `npm start` does, without a token', () => {
    const dry = JSON.parse(ok(['service', 'install', '--dry-run', '--json']));
    // On a terminal too, the dry run says the next step.
    assert.match(ok(['service', 'install', '--dry-run']), /run:\n {2}systemctl --user daemon-reload && systemctl/);
    const unitPath = join(env.XDG_CONFIG_HOME!, 'systemd', 'user', 'switchyard.service');
    assert.equal(dry.path, unitPath);
    assert.equal(dry.written, false);
    assert.equal(existsSync(unitPath), false);
    const out = ok(['service', 'install']);
    assert.match(out, /systemctl --user daemon-reload && systemctl --user enable --now switchyard/);
    const unit = readFileSync(unitPath, 'utf8');
    assert.equal(unit, dry.content);
    const exec = unit.split('\n').find((l) => l.startsWith('ExecStart='))!;
    const root = new URL('../../', import.meta.url).pathname.replace(/\/$/, '');
    assert.equal(
      exec,
      `ExecStart="${process.execPath}" "--max-semi-space-size=4" "${root}/dist/bin/switchyard.js" "start" ` +
        '"--no-supervise"',
    );
    assert.match(unit, new RegExp(`^ExecStartPre="${process.execPath}" "${root}/bin/build\\.js" "--if-stale"$`, 'm'));
    assert.match(unit, new RegExp(`^Environment="SWITCHYARD_HOME=${svc.home}"$`, 'm'));
    assert.match(unit, new RegExp(`^Environment="SWITCHYARD_PORT=${svc.port}"$`, 'm'));
    assert.match(unit, /^RestartPreventExitStatus=78$/m);
    assert.match(unit, /^WantedBy=default\.target$/m);
    assert.ok(!unit.includes(svc.adminToken));
  });

  test("carries the running service's data directory and port when the shell names neither", () => {
    const shell = { ...env };
    delete shell.SWITCHYARD_HOME;
    const r = spawnSync(process.execPath, [bin(), 'service', 'install', '--dry-run', '--json'], {
      env: shell,
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(r.status, 0, r.stderr);
    const { content } = JSON.parse(r.stdout);
    assert.match(content, new RegExp(`^Environment="SWITCHYARD_HOME=${svc.home}"$`, 'm'));
    assert.match(content, new RegExp(`^Environment="SWITCHYARD_PORT=${svc.port}"$`, 'm'));
  });
});

describe('version', () => {
  test('prints the package version; --json as GET /version answers; needs no service', async () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8'));
    const r = cli(['version'], { SWITCHYARD_HOME: tempHome() });
    assert.equal(r.status, 0, r.stderr);
    assert.equal(r.stdout, `${pkg.version}\n`);
    assert.deepEqual(JSON.parse(ok(['version', '--json'])), (await svc.request('GET', '/version')).json);
    assert.equal(cli(['version', '--nope']).status, 2);
  });
});

describe('usage errors and a missing service', () => {
  test('bad options exit 2; no running service exits 3', () => {
    for (const args of [
      ['providers', '--nope'],
      ['models', 'load'],
      ['models', 'explode', 'x'],
      ['usage', '--by', 'nope'],
      ['usage', '--days', '0'],
      ['logs', '-n', 'lots'],
      ['jobs', 'watch'],
      ['ps', 'extra'],
      ['services', 'x'],
      ['service', 'remove'],
    ]) {
      const r = cli(args);
      assert.equal(r.status, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, /^switchyard \w+: /);
    }
    // A bad option is named, with the command's usage; parseArgs' own words stay out.
    const unknown = cli(['providers', '--nope']);
    assert.match(unknown.stderr, /^switchyard providers: Unknown option --nope\. Usage: switchyard providers /);
    assert.doesNotMatch(unknown.stderr, /positional argument/);
    assert.match(cli(['usage', '--days']).stderr, /^switchyard usage: --days needs a value\. Usage: switchyard usage /);
    assert.match(cli(['ps', '--json=yes']).stderr, /^switchyard ps: --json takes no value\. Usage: switchyard ps/);
    const nowhere = cli(['ps'], { SWITCHYARD_HOME: tempHome() });
    assert.equal(nowhere.status, 3);
    assert.match(nowhere.stderr, /No running Switchyard service found/);
  });
});
