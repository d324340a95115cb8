import { ServiceError } from '../protocol/errors.ts';
import type { ServiceCreate } from '../protocol/http/services.ts';
import { locateLlamaServer, resolvedLlamaServer } from './llama-server-binary.ts';
import type { Entry } from './service-entries.ts';
import { bindable, checkNotTaken, checkPort } from './service-ports.ts';
import type { ModelLibrary } from '../workers/runtime/library-watch.ts';

// What a new llama-server service is checked for before it is stored: its model in the library and healthy,
// a llama-server to run it, and a free loopback port (the one it names, or one picked for it).

export async function checkCreate(
  input: ServiceCreate,
  deps: { library: ModelLibrary; processEnv: NodeJS.ProcessEnv; ownPort(): number | null },
  entries: Map<string, Entry>,
): Promise<{ binary: string | null; port: number }> {
  const model = deps.library.lookup(input.model);
  if (!model)
    throw new ServiceError(
      'NOT_FOUND',
      `No model \`${input.model.slice(0, 200)}\` in the model library (GET /v1/runtime/models).`,
      { param: 'model' },
    );
  if (model.health !== 'ok')
    throw new ServiceError('INVALID_REQUEST', `The model file is ${model.health}: ${model.problem ?? model.health}.`, {
      param: 'model',
    });
  const binary = input.binary ?? null;
  if (binary !== null && (await resolvedLlamaServer(binary)) === null) {
    throw new ServiceError(
      'INVALID_REQUEST',
      '`binary` must be the absolute path of an executable file named llama-server (a link must lead to one).',
      { param: 'binary' },
    );
  }
  if ((await locateLlamaServer(deps.processEnv, binary)) === null) {
    throw new ServiceError(
      'CONFLICT',
      'No llama-server executable is on the PATH of the service; install llama.cpp or name one in `binary`.',
      { param: 'binary' },
    );
  }
  let port = input.port ?? 0;
  if (port !== 0) await checkPort(port, deps.ownPort(), entries.values());
  else {
    const picked = await bindable(0);
    if (picked === null) throw new Error('no free loopback port');
    checkNotTaken(picked, entries.values());
    port = picked;
  }
  return { binary, port };
}
