import type { MessagePort } from 'node:worker_threads';
import { errorFromWire, errorToWire, ServiceError, type WireError } from '../../protocol/errors.ts';

// The control plane's ports (protocol/ports/) answered over a MessagePort: a call is one message naming the
// port, the method and its arguments; its answer is one message with the value, or the error. What crosses is
// structured-cloned, so a port's arguments and answers must be plain data, as protocol/ports/ promises. A
// ServiceError crosses whole (code, message, details, headers), so a route answers the same 4xx as when it
// called the port in its own thread; any other error arrives as an Error with its name and message, which the
// edge turns into INTERNAL as it does any unknown throw. One endpoint serves every port; W3.2 puts the control
// plane on its own thread behind it.

interface Call {
  id: number;
  port: string;
  method: string;
  args: unknown[];
}

type Answer = { id: number; value: unknown } | ({ id: number } & WireError);

export interface PortServer {
  close(): void;
}

const isCall = (m: unknown): m is Call =>
  typeof m === 'object' &&
  m !== null &&
  typeof (m as Call).id === 'number' &&
  typeof (m as Call).port === 'string' &&
  typeof (m as Call).method === 'string' &&
  Array.isArray((m as Call).args);

function answerOf(id: number, err: unknown): Answer {
  return { id, ...errorToWire(err) };
}

/**
 * Answers calls arriving on `endpoint` with the named ports' methods. Only the methods listed per port are
 * callable: a port object has more (its readers for the hot path, its own helpers) than the edge may call.
 */
export function servePorts(
  endpoint: MessagePort,
  ports: Record<string, { target: object; methods: readonly string[] }>,
): PortServer {
  const send = (answer: Answer) => {
    try {
      endpoint.postMessage(answer);
    } catch (err) {
      // The value cannot be cloned (a function, a class with private state): the caller still gets an answer.
      endpoint.postMessage(answerOf(answer.id, new Error(`The answer could not cross: ${String(err)}`)));
    }
  };
  endpoint.unref();
  endpoint.on('message', (m: unknown) => {
    if (!isCall(m)) return;
    const port = Object.hasOwn(ports, m.port) ? ports[m.port] : undefined;
    if (port === undefined || !port.methods.includes(m.method)) {
      send(answerOf(m.id, new Error(`No method ${m.port}.${m.method} is served.`)));
      return;
    }
    const target = port.target as Record<string, (...args: unknown[]) => unknown>;
    let result: unknown;
    try {
      result = target[m.method]!(...m.args);
    } catch (err) {
      send(answerOf(m.id, err));
      return;
    }
    Promise.resolve(result).then(
      (value) => send({ id: m.id, value }),
      (err: unknown) => send(answerOf(m.id, err)),
    );
  });
  return { close: () => endpoint.close() };
}

/** The client end: one per endpoint, shared by every remote port on it. */
export interface PortClient {
  /** `P` with each listed method sent over the endpoint; each answers a promise. */
  remote<P extends object>(port: string, methods: readonly (keyof P & string)[]): P;
  /** Rejects every call still waiting and stops listening. */
  close(): void;
}

export function portClient(endpoint: MessagePort): PortClient {
  let next = 1;
  let closed = false;
  const waiting = new Map<number, { resolve(v: unknown): void; reject(e: unknown): void }>();
  // A call waiting for its answer is a promise someone awaits; the endpoint itself holds no process open.
  endpoint.unref();
  endpoint.on('message', (a: Answer) => {
    const call = waiting.get(a.id);
    if (call === undefined) return;
    waiting.delete(a.id);
    if ('value' in a) call.resolve(a.value);
    else call.reject(errorFromWire(a));
  });
  const stopped = () => new ServiceError('OVERLOADED', 'The service is shutting down.');

  function call(port: string, method: string, args: unknown[]): Promise<unknown> {
    if (closed) return Promise.reject(stopped());
    const id = next++;
    return new Promise((resolve, reject) => {
      // postMessage throws at once for an argument that cannot be cloned: the call fails, nothing waits.
      endpoint.postMessage({ id, port, method, args } satisfies Call);
      waiting.set(id, { resolve, reject });
    });
  }

  return {
    remote<P extends object>(port: string, methods: readonly (keyof P & string)[]): P {
      const out: Record<string, (...args: unknown[]) => Promise<unknown>> = {};
      for (const method of methods) out[method] = (...args) => call(port, method, args);
      return out as P;
    },
    close() {
      closed = true;
      for (const { reject } of waiting.values()) reject(stopped());
      waiting.clear();
      endpoint.close();
    },
  };
}
