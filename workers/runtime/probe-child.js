// A throwaway process that loads one model file and exits: llama.cpp aborts the whole process on some
// malformed files, so a file is loaded here before the runtime worker trusts it. Plain JavaScript, so the
// child starts without the TypeScript loader. The answer is one JSON line; llama.cpp's own messages (which
// name the path) are not passed on.
import { getLlama, LlamaLogLevel } from 'node-llama-cpp';

const path = process.argv[2];
const gpu = process.argv[3] === 'auto' ? 'auto' : false;
try {
  const llama = await getLlama({ gpu, build: 'never', logLevel: LlamaLogLevel.disabled, progressLogs: false });
  const model = await llama.loadModel({ modelPath: path });
  const context = await model.createContext({ contextSize: 256, threads: 1 });
  await context.dispose();
  await model.dispose();
  process.stdout.write(JSON.stringify({ ok: true }) + '\n');
} catch {
  process.stdout.write(JSON.stringify({ ok: false }) + '\n');
}
process.exit(0);
