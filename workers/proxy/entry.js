// Piscina loads this plain-JS file in each proxy worker: the compiled worker.js in a build, the TypeScript
// through tsx in the source tree (workers/load-beside.js).
import { loadBeside } from '../load-beside.js';

const { default: run } = await loadBeside(import.meta.url, 'worker');
export default run;
