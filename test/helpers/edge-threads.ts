import http from 'node:http';
import { test } from 'node:test';
import { Agent, setGlobalDispatcher } from 'undici';
import { loadNativeUws } from '../../edge/http/uws-load.ts';
import { inProcessDefaults } from './in-process.ts';

/**
 * The environment that serves on uWebSockets.js wherever a native build loads: several edge threads need it, and
 * `auto` passes over the build that loads on Debian 12's glibc (edge/http/choose-edge.ts).
 */
export const UWS_ENV: Readonly<Record<string, string>> = 'uws' in loadNativeUws() ? { SWITCHYARD_EDGE: 'uws' } : {};

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
  process.env.SWITCHYARD_EDGE = 'uws';
  setGlobalDispatcher(new Agent({ keepAliveTimeout: 10, keepAliveMaxTimeout: 10 }));
  http.globalAgent = new http.Agent({ keepAlive: false });
  return true;
}
