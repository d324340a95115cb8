import { spawnSync } from 'node:child_process';
import { mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import { locateInstance } from '../bin/locate.js';
import { CliError, EXIT } from './client.ts';

// `switchyard service install`: the service starts at login, as `ollama serve` does once installed. Linux
// gets a systemd user unit, macOS a launchd agent; either runs what `npm start` runs (this Node, the compiled
// build in dist/, built first when stale) with `start --no-supervise`, since systemd and launchd restart it
// themselves (not after exit 78, which says a restart would fail the same way). It carries the data directory
// and port of the service running now (bin/locate.js finds it), so the unit serves the same data. The unit holds
// no token: the service reads its own from the data directory. Nothing is enabled here: the next step is
// printed, for the person to run.

export interface Unit {
  path: string;
  content: string;
  next: string;
}

/** The source tree and the executables in it: `bin` the build's (what `npm start` runs), `build` bin/build.js. */
export interface Install {
  root: string;
  bin: string;
  build: string;
}

/** From the executable running now: the source's bin/switchyard.js, or the build's dist/bin/switchyard.js. */
export function installOf(running: string): Install {
  const binDir = dirname(running);
  const inBuild = basename(dirname(binDir)) === 'dist';
  const root = inBuild ? dirname(dirname(binDir)) : dirname(binDir);
  return { root, bin: join(root, 'dist', 'bin', 'switchyard.js'), build: join(root, 'bin', 'build.js') };
}

/** `npm start`'s Node flags (package.json), so the service runs as it does from a terminal. */
const NODE_FLAGS = ['--max-semi-space-size=4'];
const CARRIED_ENV = ['SWITCHYARD_HOME', 'SWITCHYARD_PORT', 'SWITCHYARD_LOG_LEVEL'] as const;

/** systemd's quoting: each word in double quotes, `\` and `"` escaped, `%` doubled (its specifier sign). */
const systemdWord = (word: string) => `"${word.replace(/[\\"]/g, (c) => `\\${c}`).replace(/%/g, '%%')}"`;
const xml = (text: string) =>
  text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');

function command(bin: string): string[] {
  return [process.execPath, ...NODE_FLAGS, bin, 'start', '--no-supervise'];
}

/** The environment the unit sets: the running service's data directory and port over the shell's. */
function carried(env: NodeJS.ProcessEnv): [string, string][] {
  const running = locateInstance(env);
  const values: NodeJS.ProcessEnv = {
    ...env,
    ...(running && { SWITCHYARD_HOME: running.dataDir, SWITCHYARD_PORT: String(running.port) }),
  };
  return CARRIED_ENV.flatMap((name) => (values[name] ? [[name, values[name]!] as [string, string]] : []));
}

export function systemdUnit(install: Install, env: NodeJS.ProcessEnv): Unit {
  const configHome = env.XDG_CONFIG_HOME || join(homedir(), '.config');
  const lines = [
    '[Unit]',
    'Description=Switchyard, a local AI gateway',
    'After=network.target',
    '',
    '[Service]',
    'Type=simple',
    // As `npm start`'s prestart: a build made from other source than the tree holds is made again first.
    `ExecStartPre=${[process.execPath, install.build, '--if-stale'].map(systemdWord).join(' ')}`,
    `ExecStart=${command(install.bin).map(systemdWord).join(' ')}`,
    ...carried(env).map(([k, v]) => `Environment=${systemdWord(`${k}=${v}`)}`),
    'Restart=on-failure',
    'RestartSec=2',
    'RestartPreventExitStatus=78',
    // Shutdown drains in-flight requests for up to 10 s (SWITCHYARD_DRAIN_MS).
    'TimeoutStopSec=20',
    '',
    '[Install]',
    'WantedBy=default.target',
    '',
  ];
  return {
    path: join(configHome, 'systemd', 'user', 'switchyard.service'),
    content: lines.join('\n'),
    next: 'systemctl --user daemon-reload && systemctl --user enable --now switchyard',
  };
}

/**
 * launchd has no ExecStartPre: one shell runs the build when stale, then becomes the service. The paths are
 * the shell's arguments ($0 $1 $2), never part of its script, so no path needs quoting.
 */
export function launchdProgram(install: Install): string[] {
  const script = `"$0" "$1" --if-stale && exec "$0" ${NODE_FLAGS.join(' ')} "$2" start --no-supervise`;
  return ['/bin/sh', '-c', script, process.execPath, install.build, install.bin];
}

export function launchdAgent(install: Install, env: NodeJS.ProcessEnv): Unit {
  const label = 'dev.switchyard.service';
  const logDir = join(homedir(), 'Library', 'Logs', 'Switchyard');
  const strings = (values: string[]) => values.map((v) => `    <string>${xml(v)}</string>`).join('\n');
  const envEntries = carried(env)
    .map(([k, v]) => `    <key>${xml(k)}</key>\n    <string>${xml(v)}</string>`)
    .join('\n');
  const content = `<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<plist version="1.0">
<dict>
  <key>Label</key>
  <string>${label}</string>
  <key>ProgramArguments</key>
  <array>
${strings(launchdProgram(install))}
  </array>
  <key>EnvironmentVariables</key>
  <dict>
${envEntries}
  </dict>
  <key>RunAtLoad</key>
  <true/>
  <key>KeepAlive</key>
  <dict>
    <key>SuccessfulExit</key>
    <false/>
  </dict>
  <key>StandardOutPath</key>
  <string>${xml(join(logDir, 'switchyard.log'))}</string>
  <key>StandardErrorPath</key>
  <string>${xml(join(logDir, 'switchyard.err'))}</string>
</dict>
</plist>
`;
  return {
    path: join(homedir(), 'Library', 'LaunchAgents', `${label}.plist`),
    content,
    next: `launchctl load -w ~/Library/LaunchAgents/${label}.plist`,
  };
}

/** `npm start`'s prestart: builds dist/ when it is missing or stale; a failed build is the command's failure. */
function buildIfStale(install: Install): void {
  const r = spawnSync(process.execPath, [install.build, '--if-stale'], { stdio: ['ignore', 2, 2] });
  if (r.status !== 0)
    throw new CliError(`The build the unit runs failed (\`node ${install.build} --if-stale\`).`, EXIT.failed);
}

export function serviceInstall(json: boolean, dryRun: boolean, env: NodeJS.ProcessEnv = process.env): number {
  const install = installOf(realpathSync(process.argv[1]!));
  let unit: Unit;
  if (process.platform === 'linux') unit = systemdUnit(install, env);
  else if (process.platform === 'darwin') unit = launchdAgent(install, env);
  else
    throw new CliError(
      `\`service install\` knows systemd (Linux) and launchd (macOS), not ${process.platform}.`,
      EXIT.failed,
    );
  if (!dryRun) {
    buildIfStale(install);
    mkdirSync(dirname(unit.path), { recursive: true });
    // launchd opens the agent's log files but does not create their folder.
    if (process.platform === 'darwin') mkdirSync(join(homedir(), 'Library', 'Logs', 'Switchyard'), { recursive: true });
    writeFileSync(unit.path, unit.content, { mode: 0o644 });
  }
  if (json) {
    process.stdout.write(
      JSON.stringify({ path: unit.path, written: !dryRun, next: unit.next, content: unit.content }, null, 2) + '\n',
    );
  } else if (dryRun) {
    process.stdout.write(
      `Would write ${unit.path}:\n\n${unit.content}\nThen, to start Switchyard now and at every ` +
        `login, run:\n  ${unit.next}\n`,
    );
  } else {
    process.stdout.write(`Wrote ${unit.path}\nTo start Switchyard now and at every login, run:\n  ${unit.next}\n`);
  }
  return EXIT.ok;
}
