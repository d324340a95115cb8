// The traces thread starts here: the compiled worker.js in a build, the TypeScript through tsx in the source tree
// (workers/load-beside.js).
import { loadBeside } from '../load-beside.js';

await loadBeside(import.meta.url, 'worker');
