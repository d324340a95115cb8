// Every figure the page shows comes from the API, called with the token kept in this tab's sessionStorage
// (gone when the tab closes; never in a URL).

const KEY = 'switchyard.token';

export const session = {
  token: () => sessionStorage.getItem(KEY),
  signIn: (token) => sessionStorage.setItem(KEY, token),
  signOut: () => sessionStorage.removeItem(KEY),
};

/**
 * The one 401 handler: a call made with this tab's token that is refused with 401 (the token was revoked or
 * expired) signs the tab out. app.js sets it; a pasted token being tried (sign-in.js) is not the tab's.
 */
let unauthorized = () => {};
export const onUnauthorized = (handler) => {
  unauthorized = handler;
};

export class ApiError extends Error {
  constructor(status, envelope) {
    super(envelope?.error?.message ?? `HTTP ${status}`);
    this.status = status;
    this.code = envelope?.error?.code ?? null;
  }
}

export async function api(method, path, body, token = session.token()) {
  const headers = { authorization: `Bearer ${token}` };
  if (body !== undefined) headers['content-type'] = 'application/json';
  const res = await fetch(path, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
    cache: 'no-store',
  });
  const text = await res.text();
  let json = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  if (res.status === 401 && token === session.token()) unauthorized();
  if (!res.ok) throw new ApiError(res.status, json);
  return json;
}

export const get = (path) => api('GET', path);

/** `/path?a=1&b=2`, leaving out undefined values. */
export function withQuery(path, query) {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== null && v !== '') params.set(k, String(v));
  const qs = params.toString();
  return qs ? `${path}?${qs}` : path;
}

/**
 * Pairing (docs/api.md "Pairing"): POST answers with an event stream, read here from fetch since EventSource
 * cannot POST. Calls `onPending({id, userCode, expiresAt})`, then resolves with the secret, or rejects when the
 * request is denied, expires or the stream ends. Aborting `signal` withdraws the request.
 */
export async function pair(clientName, scopes, onPending, signal) {
  const res = await fetch('/v1/pairing/requests', {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'text/event-stream' },
    body: JSON.stringify({ clientName, scopes }),
    signal,
    cache: 'no-store',
  });
  if (!res.ok) {
    let json = null;
    try {
      json = await res.json();
    } catch {
      json = null;
    }
    throw new ApiError(res.status, json);
  }
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = '';
  for (;;) {
    const { value, done } = await reader.read();
    if (done) throw new Error('The pairing request ended without an answer.');
    buffer += value;
    let cut;
    while ((cut = buffer.indexOf('\n\n')) >= 0) {
      const frame = buffer.slice(0, cut);
      buffer = buffer.slice(cut + 2);
      let event = 'message';
      let data = '';
      for (const line of frame.split('\n')) {
        if (line.startsWith('event:')) event = line.slice(6).trim();
        else if (line.startsWith('data:')) data += line.slice(5).trim();
      }
      if (!data) continue;
      const payload = JSON.parse(data);
      if (event === 'pairing.pending') onPending(payload);
      else if (event === 'pairing.approved') {
        reader.cancel().catch(() => {});
        return payload.secret;
      } else if (event === 'pairing.denied') throw new Error('The pairing request was denied.');
      else if (event === 'pairing.expired') throw new Error('The pairing request expired.');
    }
  }
}
