import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, test } from 'node:test';
import { launchdAgent, launchdProgram } from '../../cli/install.ts';

// The launchd agent runs what `npm start` runs: the build when stale, then the service. Its program is run
// here for real (a shell is a shell), against a stand-in build and executable in a folder whose name has a
// space and a quote, as a home folder may.

const dir = mkdtempSync(join(tmpdir(), "switchyard install 'agent' "));
after(() => rmSync(dir, { recursive: true, force: true }));
const install = { root: dir, build: join(dir, 'build.js'), bin: join(dir, 'switchyard.js') };
const marker = join(dir, 'built');
writeFileSync(
  install.build,
  `require('node:fs').writeFileSync(${JSON.stringify(marker)}, process.argv.slice(2).join(' '));`,
);
writeFileSync(install.bin, 'console.log(JSON.stringify({ args: process.argv.slice(2), flags: process.execArgv }));');

test("the launchd program builds when stale, then becomes the service with npm start's flags", () => {
  const [command, ...args] = launchdProgram(install);
  const run = spawnSync(command!, args, { encoding: 'utf8' });
  assert.equal(run.status, 0, run.stderr);
  assert.equal(readFileSync(marker, 'utf8'), '--if-stale', 'the build ran first');
  assert.deepEqual(JSON.parse(run.stdout), { args: ['start', '--no-supervise'], flags: ['--max-semi-space-size=4'] });
});

test('a failed build starts no service (launchd then restarts the agent)', () => {
  writeFileSync(install.build, 'process.exit(1);');
  const [command, ...args] = launchdProgram(install);
  const run = spawnSync(command!, args, { encoding: 'utf8' });
  assert.equal(run.status, 1);
  assert.equal(run.stdout, '');
});

test('the agent holds the program, each argument XML-escaped', () => {
  const { content } = launchdAgent(install, {});
  const strings = [...content.matchAll(/<string>([^<]*)<\/string>/g)].map((m) => m[1]!.replace(/&quot;/g, '"'));
  for (const arg of launchdProgram(install)) assert.ok(strings.includes(arg.replace(/&/g, '&amp;')), arg);
});
