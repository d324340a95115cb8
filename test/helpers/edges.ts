import { nodeHttpUws } from '../../edge/http/server-node.ts';
import { loadNativeUws, type Uws } from '../../edge/http/uws-load.ts';
import type { EdgeName } from '../../edge/http/choose-edge.ts';

/**
 * The edges an adapter test runs against: the native uWebSockets.js build when one loads on this Node.js and
 * glibc, and always node:http. A test that differs between them says so by `name`.
 */
export function testEdges(): { name: EdgeName; uws: Uws }[] {
  const native = loadNativeUws();
  const edges: { name: EdgeName; uws: Uws }[] = [];
  if ('uws' in native) edges.push({ name: 'uWebSockets.js', uws: native.uws });
  edges.push({ name: 'node:http', uws: nodeHttpUws() });
  return edges;
}
