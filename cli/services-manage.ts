import type { DeletedAnswer } from '../protocol/http/answers.ts';
import type { ServiceView } from '../protocol/http/services.ts';
import type { JobRecord } from '../protocol/jobs.ts';
import { CliError, type Client, EXIT } from './client.ts';
import { follow } from './follow.ts';
import { cell, say, printJson, path } from './output.ts';

// Supervised llama-servers from the command line: add one for a model of the library, start it (followed as a
// job with a progress bar until it answers its health check), stop it, remove it. The embedded runtime is
// listed beside them but starts and stops with the service: the service refuses actions on it (exit 1).

export interface ServiceAdd {
  kind: string;
  model: string;
  id?: string;
  name?: string;
  port?: number;
  /** False: created stopped (`autoStart: false`). */
  start: boolean;
}

/** `services add llamacpp --model <id>`: created, and started unless --no-start (the service's default). */
export async function addService(client: Client, json: boolean, o: ServiceAdd): Promise<number> {
  if (o.kind !== 'llamacpp')
    throw new CliError(
      `Only llamacpp services can be added (a llama-server for a model), not "${o.kind}".`,
      EXIT.usage,
    );
  const service = await client.call<ServiceView>('POST', '/v1/services', {
    kind: 'llamacpp',
    model: o.model,
    ...(o.id !== undefined && { id: o.id }),
    ...(o.name !== undefined && { displayName: o.name }),
    ...(o.port !== undefined && { port: o.port }),
    ...(!o.start && { autoStart: false }),
  });
  if (json) return (printJson(service), 0);
  say(`Added service ${service.id} (llama-server for ${cell(service.model)}) at ${service.url}: ${service.state}.`);
  if (service.desired === 'stopped') say(`Start it with \`switchyard services start ${service.id}\`.`);
  return 0;
}

/** `services start <id>`: the start job followed until the server answers its health check. */
export async function startService(client: Client, json: boolean, id: string): Promise<number> {
  const job = await client.call<JobRecord>('POST', `/v1/services/${path(id)}/actions/start`);
  return follow(client, job, `Starting ${id}`, json);
}

export async function stopService(client: Client, json: boolean, id: string): Promise<number> {
  const service = await client.call<ServiceView>('POST', `/v1/services/${path(id)}/actions/stop`);
  if (json) return (printJson(service), 0);
  say(`Service ${service.id} is ${service.state}.`);
  return 0;
}

export async function removeService(client: Client, json: boolean, id: string): Promise<number> {
  const answer = await client.call<DeletedAnswer>('DELETE', `/v1/services/${path(id)}`);
  if (json) return (printJson(answer), 0);
  say(`Removed service ${answer.id}; its process is gone.`);
  return 0;
}
