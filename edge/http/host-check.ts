// DNS-rebinding guard: while the listener is local-only, a request must name a loopback host, so a web page
// on evil.example whose DNS answer flips to 127.0.0.1 is refused even though the socket is local.

function hostnameOf(hostHeader: string): string {
  const h = hostHeader.trim().toLowerCase();
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    return end === -1 ? h : h.slice(1, end);
  }
  const colon = h.indexOf(':');
  return colon === -1 ? h : h.slice(0, colon);
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
  return isLoopbackHostname(name) || name === boundHost.toLowerCase();
}

export function isLoopbackAddress(address: string): boolean {
  return IPV4_LOOPBACK.test(address) || address === '::1' || address.startsWith('::ffff:127.') || address === '0000:0000:0000:0000:0000:0000:0000:0001';
}
