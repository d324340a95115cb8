import { hostname, networkInterfaces } from 'node:os';

// A provider whose baseUrl is this service's own listener lists the catalog back into itself at every refresh
// (each refresh adds `<id>/` in front of every model it listed before) and would relay its calls to itself.
// These are the spellings of "this machine" a URL can carry. A DNS name of someone else's that resolves to a
// loopback address is not caught here (no lookup at validation); the per-provider model bound of
// provider-service.ts still caps what such a loop can add.

/** The port a URL reaches, its scheme's default when it names none. */
function portOf(url: URL): number {
  if (url.port !== '') return Number(url.port);
  return url.protocol === 'https:' ? 443 : 80;
}

function ipv4(host: string): number[] | null {
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(host);
  return m === null ? null : m.slice(1).map(Number);
}

/** `::ffff:7f00:1` (IPv4-mapped) and `::7f00:1` (IPv4-compatible) as the IPv4 address they carry. */
function embeddedIpv4(host: string): number[] | null {
  const m = /^::(?:ffff:)?([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(host);
  if (m === null) return null;
  const hi = parseInt(m[1]!, 16);
  const lo = parseInt(m[2]!, 16);
  return [hi >> 8, hi & 0xff, lo >> 8, lo & 0xff];
}

/** A host in the spelling WHATWG URL gives it (IPv4 as a dotted quad, IPv6 compressed), brackets dropped. */
function canonicalHost(host: string): string {
  try {
    const h = new URL(`http://${host.includes(':') && !host.startsWith('[') ? `[${host}]` : host}/`).hostname;
    return h.startsWith('[') ? h.slice(1, -1) : h.replace(/\.$/, '');
  } catch {
    return host.toLowerCase();
  }
}

/** Every address of this machine's interfaces: a service bound to 0.0.0.0 answers on each. */
function interfaceAddresses(): Set<string> {
  const out = new Set<string>();
  for (const list of Object.values(networkInterfaces())) {
    // A link-local address with a zone (`fe80::1%eth0`) cannot be written in a URL at all.
    for (const a of list ?? []) if (!a.address.includes('%')) out.add(canonicalHost(a.address));
  }
  return out;
}

function isLoopbackV4(bytes: readonly number[]): boolean {
  // 127/8 is loopback; 0.0.0.0 (and the rest of 0/8, which nothing routes) reaches the local host on Linux.
  return bytes[0] === 127 || bytes[0] === 0;
}

/** True when `host` (a URL's hostname) names this machine. */
export function isThisMachine(urlHost: string): boolean {
  const host = canonicalHost(urlHost);
  if (host === 'localhost' || host.endsWith('.localhost')) return true;
  const v4 = ipv4(host) ?? embeddedIpv4(host);
  if (v4 !== null && isLoopbackV4(v4)) return true;
  if (host === '::1' || host === '::') return true;
  const own = hostname().toLowerCase();
  if (host === own || host === own.split('.')[0]) return true;
  return interfaceAddresses().has(v4 === null ? host : v4.join('.'));
}

/** True when `baseUrl` (an absolute http(s) URL) reaches this machine on `port`. */
export function reachesOwnListener(baseUrl: string, port: number): boolean {
  const url = new URL(baseUrl);
  return portOf(url) === port && isThisMachine(url.hostname);
}
