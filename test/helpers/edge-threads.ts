import http from 'node:http';
import { test } from 'node:test';
import { Agent, setGlobalDispatcher } from 'undici';
import { loadNativeUws } from '../../edge/http/uws-load.ts';
import { inProcessDefaults } from './in-process.ts';

/**
 * For a family file that runs its suites with two edge threads (service/edge-threads.ts): every in-process
 * service of the file starts with two, and fetch, node:http and the SDKs let their idle connections go at once
 * (a stopping edge thread waits for its connections to close, edge/http/open-connections.ts; undici keeps them
 * 4 s, node:http's global agent 5 s). False where no uWebSockets.js build loads (Node 24 here): one thread
 * serves, and the file's suites would only repeat their one-thread run, so a skipped test says so instead.
 */
export function withTwoEdgeThreads(): boolean {
  if (!('uws' in loadNativeUws())) {
    test('two edge threads', { skip: 'no uWebSockets.js build loads on this Node: the service serves from one' });
    return false;
  }
  inProcessDefaults.edgeThreads = 2;
  setGlobalDispatcher(new Agent({ keepAliveTimeout: 10, keepAliveMaxTimeout: 10 }));
  http.globalAgent = new http.Agent({ keepAlive: false });
  return true;
}
