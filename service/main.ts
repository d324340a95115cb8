import { availableParallelism } from 'node:os';
import { spawn } from 'node:child_process';
import { printToken, resolveDataDir, resolvePort, undoFreshStart } from './data-dir.ts';
import { DataDirLocked } from '../store/dir-lock.ts';
import { VERSION_INFO } from '../edge/routes/process.ts';
import { EXIT_CANNOT_START, supervise, type ReadyMessage } from './supervise.ts';
import { COMMANDS, COMMANDS_HELP, runCommand } from '../cli/index.ts';

// `switchyard [start [--no-supervise]] | token | <command> | --help | --version`. Notices for a person go to
// stderr; stdout carries the JSON log, which never holds a token. `start` supervises the service in a child
// process (service/supervise.ts); the child is `start --no-supervise`. The commands that talk to a running
// service live in cli/.

const HELP = `Usage: switchyard [command]

Commands:
  start      Run the service (default). Listens on 127.0.0.1:3939. The service runs in a child
             process that is restarted, with a growing delay, if it dies; SIGINT/SIGTERM stop it.
             --no-supervise runs it in this process only, never restarted.
  token      Print the bootstrap admin token from the data directory.
  version    Print the version (--json: name, version and API version, as GET /version answers).
                                                                    [--json]
${COMMANDS_HELP}
  --help     Show this help.
  --version  Show the version.

Environment:
  SWITCHYARD_HOME        data directory (default: the platform's per-user data directory)
  SWITCHYARD_PORT        port to listen on (default 3939; 0 picks a free port)
  SWITCHYARD_LOG_LEVEL   pino log level (default info)
  SWITCHYARD_DRAIN_MS    how long shutdown waits for in-flight requests (default 10000)
  SWITCHYARD_SUPERVISE   0 runs the service without the restarting supervisor (as --no-supervise)
  SWITCHYARD_TOKEN       the token the commands send (default: the admin token in the data directory)

Exit codes of the commands: 0 done, 1 the service refused or the job failed, 2 bad usage,
3 no running service found; \`launch\` ends with the agent's own code once it started it.
`;

const say = (line: string) => process.stderr.write(line + '\n');

/**
 * glibc raises its mmap threshold each time a large block is freed, after which request bodies of many MiB
 * come from the heap and stay resident once freed: after a burst of large uploads the service would keep
 * gigabytes. A fixed threshold (set before the process starts, so only for the child) keeps such blocks
 * mapped on their own and returned when freed. A value the user set is kept.
 */
function serviceEnv(): NodeJS.ProcessEnv {
  return { ...process.env, MALLOC_MMAP_THRESHOLD_: process.env.MALLOC_MMAP_THRESHOLD_ ?? String(128 * 1024) };
}

/** The same executable, Node flags and entry script: `start --no-supervise`, over an IPC channel. */
function spawnService() {
  return spawn(process.execPath, [...process.execArgv, process.argv[1]!, 'start', '--no-supervise'], {
    stdio: ['inherit', 'inherit', 'inherit', 'ipc'],
    env: serviceEnv(),
    // Its own process group: a Ctrl-C at the terminal reaches only the supervisor, which passes it on once
    // (a second signal would make the service skip its drain).
    detached: true,
  });
}

// The logger (pino) and the edge are loaded by `start` alone: the commands start faster without them.
async function superviseService(): Promise<void> {
  const { createLogger } = await import('../edge/http/log.ts');
  const log = createLogger();
  const code = await supervise({
    spawnService,
    onStopSignal(handler) {
      process.on('SIGINT', () => handler('SIGINT'));
      process.on('SIGTERM', () => handler('SIGTERM'));
    },
    log,
    say,
  });
  log.flush(() => process.exit(code));
}

async function start(): Promise<void> {
  // Loaded here, not at the top: the supervisor never runs the service and stays a small process.
  const { startService } = await import('./compose.ts');
  const { createLogger } = await import('../edge/http/log.ts');
  const { createLogTail } = await import('../edge/http/log-tail.ts');
  const { parseEdgeMode, parseEdgeThreads } = await import('../edge/http/choose-edge.ts');
  const dataDir = resolveDataDir();
  const logTail = createLogTail();
  const log = createLogger(undefined, logTail);
  const undo = undoFreshStart(dataDir);
  const service = await startService({
    dataDir,
    port: resolvePort(),
    log,
    logTail,
    // SWITCHYARD_ALLOW_SLOW_EDGE is no longer read: where no native build loads, node:http serves anyway.
    edge: parseEdgeMode(process.env.SWITCHYARD_EDGE),
    edgeThreads: parseEdgeThreads(process.env.SWITCHYARD_EDGE_THREADS, availableParallelism()),
  }).catch((err: unknown) => {
    // A second start on a taken port must not leave a data directory with a token nobody saw. One refused the
    // data directory's lock touches nothing: the directory belongs to the service that holds it, which may have
    // created it a moment after this start found it missing.
    if (!(err instanceof DataDirLocked)) undo();
    throw err;
  });
  const shownHost = service.host === '0.0.0.0' ? '127.0.0.1' : service.host;
  say(`Switchyard ${VERSION_INFO.version} listening on http://${shownHost}:${service.port}`);
  say(`Local GGUF models are served from ${service.modelsDirectory()}`);
  if (service.bootstrapSecret) {
    say(`Created an admin token (shown once here; also saved to ${service.tokenFile}):`);
    say(`  ${service.bootstrapSecret}`);
  } else {
    say(`Admin token: run \`switchyard token\` (saved in ${service.tokenFile})`);
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
  if (process.send) {
    // Supervised: say when serving (the supervisor's backoff resets on a healthy run), and stop when the
    // supervisor is gone (killed with SIGKILL), rather than run on unwatched.
    process.send({ t: 'ready', port: service.port } satisfies ReadyMessage);
    process.on('disconnect', () => {
      if (!stopping) stop('the supervisor exited');
    });
  }
}

const args = process.argv.slice(2);
const noSupervise = args.includes('--no-supervise') || process.env.SWITCHYARD_SUPERVISE === '0';

const command = args.find((a) => a !== '--no-supervise') ?? 'start';
const serviceCommand = COMMANDS.find((c) => c === command);
if (serviceCommand !== undefined) process.exit(await runCommand(serviceCommand, args.slice(args.indexOf(command) + 1)));
switch (command) {
  case 'start':
    if (!noSupervise) {
      await superviseService();
      break;
    }
    await start().catch((err: unknown) => {
      // Anything that fails before the service listens fails again on a restart: the supervisor gives up.
      say(`switchyard: ${err instanceof Error ? err.message : String(err)}`);
      process.exit(EXIT_CANNOT_START);
    });
    break;
  // biome-ignore lint/suspicious/noFallthroughSwitchClause: process.exit does not return
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
  case 'version': {
    const rest = args.slice(args.indexOf(command) + 1).filter((a) => a !== '--no-supervise');
    if (rest.some((a) => a !== '--json')) {
      say(
        `switchyard version: Unknown ${rest.find((a) => a !== '--json')!.startsWith('-') ? 'option' : 'argument'} ` +
          `${rest.find((a) => a !== '--json')}. Usage: switchyard version [--json]`,
      );
      process.exit(2);
    }
    const json = rest.includes('--json');
    process.stdout.write(json ? JSON.stringify(VERSION_INFO, null, 2) + '\n' : `${VERSION_INFO.version}\n`);
    break;
  }
  default:
    say(`switchyard: unknown command "${command}"\n`);
    process.stderr.write(HELP);
    process.exit(2);
}
