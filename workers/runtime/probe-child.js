// A throwaway process that loads one model file and exits: llama.cpp aborts the whole process on some
// malformed files, so a file is loaded here before the runtime worker trusts it. Plain JavaScript, so the
// child starts without the TypeScript loader. The answer is one JSON line; when llama.cpp refuses the file,
// its first error message goes with it as `reason` (probe.ts removes paths before anything else sees it).
import { getLlama, LlamaLogLevel } from 'node-llama-cpp';

const path = process.argv[2];
const gpu = process.argv[3] === 'auto' ? 'auto' : false;
const errors = [];
try {
  const llama = await getLlama({
    gpu,
    build: 'never',
    logLevel: LlamaLogLevel.error,
    progressLogs: false,
    logger: (level, message) => {
      if ((level === LlamaLogLevel.error || level === LlamaLogLevel.fatal) && errors.length < 4)
        errors.push(String(message).slice(0, 1000));
    },
  });
  const model = await llama.loadModel({ modelPath: path });
  const context = await model.createContext({ contextSize: 256, threads: 1 });
  await context.dispose();
  await model.dispose();
  process.stdout.write(JSON.stringify({ ok: true }) + '\n');
} catch (err) {
  process.stdout.write(
    JSON.stringify({ ok: false, reason: errors[0] ?? String(err?.message ?? err).slice(0, 1000) }) + '\n',
  );
}
process.exit(0);
