import { MessageChannel } from 'node:worker_threads';
import { portClient, servePorts } from '../workers/shared/port-channel.ts';

// How the routes reach the control plane's ports. Today both run on the main thread, and a route calls the
// port object itself. With the channel on (a test option now; W3.2's edge threads later), each port the
// families hand to their routes is a remote one: its listed methods cross a MessagePort to the control plane
// and back, so every argument and answer is proven to be plain data and every route to await its port.

export interface ControlChannel {
  /** The port a family's routes call: `target` itself, or its listed methods over the channel. */
  port<P extends object>(name: string, target: NoInfer<P>, methods: readonly (keyof P & string)[]): P;
  close(): void;
}

export function createControlChannel(on: boolean): ControlChannel {
  if (!on) return { port: (_name, target) => target, close: () => undefined };
  const { port1, port2 } = new MessageChannel();
  const served: Record<string, { target: object; methods: readonly string[] }> = {};
  const server = servePorts(port1, served);
  const client = portClient(port2);
  return {
    port<P extends object>(name: string, target: NoInfer<P>, methods: readonly (keyof P & string)[]): P {
      if (Object.hasOwn(served, name) && served[name]!.target !== target)
        throw new Error(`Two control ports are named ${name}.`);
      served[name] = { target, methods };
      return client.remote<P>(name, methods);
    },
    close() {
      client.close();
      server.close();
    },
  };
}
