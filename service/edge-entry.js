// Each edge thread starts here (service/edge-threads.ts): the compiled edge-worker.js in a build, the
// TypeScript through tsx in the source tree (workers/load-beside.js).
import { loadBeside } from '../workers/load-beside.js';

await loadBeside(import.meta.url, 'edge-worker');
