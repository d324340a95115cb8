import { mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { CliError, EXIT } from './client.ts';

// `switchyard service install`: the service starts at login, as `ollama serve` does once installed. Linux
// gets a systemd user unit, macOS a launchd agent; either runs this Node and this executable with `start
// --no-supervise`, since systemd and launchd restart it themselves (not after exit 78, which says a restart
// would fail the same way). The unit holds no token: the service reads its own from the data directory.
// Nothing is enabled here: the next step is printed, for the person to run.

export interface Unit {
  path: string;
  content: string;
  next: string;
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

function carried(env: NodeJS.ProcessEnv): [string, string][] {
  return CARRIED_ENV.flatMap((name) => (env[name] ? [[name, env[name]!] as [string, string]] : []));
}

export function systemdUnit(bin: string, env: NodeJS.ProcessEnv): Unit {
  const configHome = env.XDG_CONFIG_HOME || join(homedir(), '.config');
  const lines = [
    '[Unit]',
    'Description=Switchyard, a local AI gateway',
    'After=network.target',
    '',
    '[Service]',
    'Type=simple',
    `ExecStart=${command(bin).map(systemdWord).join(' ')}`,
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

export function launchdAgent(bin: string, env: NodeJS.ProcessEnv): Unit {
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
${strings(command(bin))}
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

export function serviceInstall(json: boolean, dryRun: boolean, env: NodeJS.ProcessEnv = process.env): number {
  const bin = realpathSync(process.argv[1]!);
  let unit: Unit;
  if (process.platform === 'linux') unit = systemdUnit(bin, env);
  else if (process.platform === 'darwin') unit = launchdAgent(bin, env);
  else
    throw new CliError(
      `\`service install\` knows systemd (Linux) and launchd (macOS), not ${process.platform}.`,
      EXIT.failed,
    );
  if (!dryRun) {
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
    process.stdout.write(`Would write ${unit.path}:\n\n${unit.content}`);
  } else {
    process.stdout.write(`Wrote ${unit.path}\nTo start Switchyard now and at every login, run:\n  ${unit.next}\n`);
  }
  return EXIT.ok;
}
