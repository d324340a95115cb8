// DNS-rebinding guard: while the listener is local-only, a request must name a loopback host, so a web page
// on evil.example whose DNS answer flips to 127.0.0.1 is refused even though the socket is local.

// RFC 9110's Host: uri-host [":" port], where the port is digits only. Anything else names no host we can
// vouch for: `127.0.0.1:47391.evil.example` is a name under evil.example, not a port of a loopback address.
const HOST = /^(?:\[([0-9a-f:.]+)\]|([a-z0-9._-]+))(?::\d{0,5})?$/;

function hostnameOf(hostHeader: string): string | null {
  const m = HOST.exec(hostHeader.trim().toLowerCase());
  return m === null ? null : (m[1] ?? m[2]!);
}

const IPV4_LOOPBACK = /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/;

export function isLoopbackHostname(name: string): boolean {
  return (
    name === 'localhost' ||
    name.endsWith('.localhost') ||
    IPV4_LOOPBACK.test(name) ||
    name === '::1' ||
    name === '0:0:0:0:0:0:0:1' ||
    name === '::ffff:127.0.0.1'
  );
}

/** A missing Host cannot come from a browser (they always send one), so it is not a rebinding risk. */
export function hostAllowed(hostHeader: string | undefined, boundHost: string): boolean {
  if (hostHeader === undefined || hostHeader === '') return true;
  const name = hostnameOf(hostHeader);
  return name !== null && (isLoopbackHostname(name) || name === boundHost.toLowerCase());
}

export function isLoopbackAddress(address: string): boolean {
  return (
    IPV4_LOOPBACK.test(address) ||
    address === '::1' ||
    address.startsWith('::ffff:127.') ||
    address === '0000:0000:0000:0000:0000:0000:0000:0001'
  );
}
