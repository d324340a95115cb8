import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createLogger } from './http/log.ts';
import { resolveDataDir, resolvePort, TOKEN_FILE } from './data-dir.ts';
import { VERSION_INFO } from './routes/process.ts';
import { startService } from './service.ts';

// `switchyard [start] | token | --help | --version`. Notices for a person go to stderr; stdout carries
// the JSON log, which never holds a token.

const HELP = `Usage: switchyard [command]

Commands:
  start      Run the service (default). Listens on 127.0.0.1:3939.
  token      Print the bootstrap admin token from the data directory.
  --help     Show this help.
  --version  Show the version.

Environment:
  SWITCHYARD_HOME        data directory (default: the platform's per-user data directory)
  SWITCHYARD_PORT        port to listen on (default 3939; 0 picks a free port)
  SWITCHYARD_LOG_LEVEL   pino log level (default info)
  SWITCHYARD_DRAIN_MS    how long shutdown waits for in-flight requests (default 10000)
`;

const say = (line: string) => process.stderr.write(line + '\n');

function printToken(): number {
  const file = join(resolveDataDir(), TOKEN_FILE);
  try {
    process.stdout.write(readFileSync(file, 'utf8'));
    return 0;
  } catch {
    say(`No token file at ${file}. Start the service once to create one, or create tokens with an admin token.`);
    return 1;
  }
}

async function start(): Promise<void> {
  const dataDir = resolveDataDir();
  const log = createLogger();
  const service = await startService({
    dataDir,
    port: resolvePort(),
    log,
    allowSlowEdge: process.env.SWITCHYARD_ALLOW_SLOW_EDGE === '1',
  });
  const shownHost = service.host === '0.0.0.0' ? '127.0.0.1' : service.host;
  say(`Switchyard ${VERSION_INFO.version} listening on http://${shownHost}:${service.port}`);
  say(`Local GGUF models are served from ${service.modelsDirectory()}`);
  if (service.bootstrapSecret) {
    say(`Created an admin token (shown once here; also saved to ${service.tokenFile}):`);
    say(`  ${service.bootstrapSecret}`);
  } else {
    say(`Admin token: run \`npx switchyard token\` (saved in ${service.tokenFile})`);
  }

  const drainMs = Number(process.env.SWITCHYARD_DRAIN_MS ?? 10_000);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) {
      say(`${signal} again: exiting now.`);
      process.exit(1);
    }
    stopping = true;
    say(`${signal}: finishing in-flight requests, then stopping.`);
    service.close(Number.isFinite(drainMs) ? drainMs : 10_000).then(
      () => log.flush(() => process.exit(0)),
      (err: unknown) => {
        say(`shutdown failed: ${String(err)}`);
        process.exit(1);
      },
    );
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}

const command = process.argv[2] ?? 'start';
switch (command) {
  case 'start':
    await start().catch((err: unknown) => {
      say(`switchyard: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(1);
    });
    break;
  case 'token':
    process.exit(printToken());
  case '--help':
  case '-h':
  case 'help':
    process.stdout.write(HELP);
    break;
  case '--version':
  case '-v':
    process.stdout.write(`${VERSION_INFO.version}\n`);
    break;
  default:
    say(`switchyard: unknown command "${command}"\n`);
    process.stderr.write(HELP);
    process.exit(2);
}
