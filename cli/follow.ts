import type { LoadedRuntimeModelList } from '../protocol/http/runtime.ts';
import type { JobRecord } from '../protocol/jobs.ts';
import { CliError, EXIT, readEvents, type Client } from './client.ts';
import { type Progress, progressBar } from './output.ts';

// Long operations as a person watches them: start a job (or pick one by ID), follow its event stream with a
// progress bar until it ends, exit 0 only when it succeeded. `--json` prints the final Job instead.

const TERMINAL = new Set(['job.succeeded', 'job.failed', 'job.cancelled']);

/**
 * Follows `/v1/jobs/{id}/events` until the job ends; resolves with the final Job. With `quiet`, a job with nothing
 * to show (a model already loaded) draws no bar: `quiet` is the line printed once it succeeds.
 */
export async function follow(
  client: Client,
  job: JobRecord,
  label: string,
  json: boolean,
  quiet?: string,
): Promise<number> {
  const bar = json ? null : quiet === undefined ? progressBar(label) : silentBar();
  bar?.update(job.progress ?? 0);
  let final: JobRecord | null = ['succeeded', 'failed', 'cancelled'].includes(job.state) ? job : null;
  if (final === null) {
    const res = await client.send('GET', `/v1/jobs/${encodeURIComponent(job.id)}/events`);
    if (res.status !== 200) {
      res.close();
      throw new CliError(`Could not follow job ${job.id} (HTTP ${res.status}).`, EXIT.failed);
    }
    for await (const frame of readEvents(res)) {
      if (typeof frame.data !== 'object' || frame.data === null) continue;
      // A job event's data is the Job as it stands (docs/api.md, Jobs).
      const data = frame.data as JobRecord;
      bar?.update(data.progress ?? 0);
      if (TERMINAL.has(frame.event)) {
        final = data;
        res.close();
        break;
      }
    }
    if (final === null)
      throw new CliError(
        `The event stream of job ${job.id} ended before the job did; see \`switchyard jobs\`.`,
        EXIT.failed,
      );
  }
  if (json) {
    process.stdout.write(JSON.stringify(final, null, 2) + '\n');
  } else if (final.state === 'succeeded') {
    bar!.done(quiet ?? `${label}: done`);
  } else {
    bar!.fail(`${label}: ${final.state}${final.error ? `: ${final.error.message}` : ''}`);
  }
  return final.state === 'succeeded' ? EXIT.ok : EXIT.failed;
}

/** What a bar says without drawing: the final line only (a failure still goes to stderr). */
function silentBar(): Progress {
  return {
    update: () => undefined,
    done: (line) => process.stdout.write(`${line}\n`),
    fail: (line) => process.stderr.write(`${line}\n`),
  };
}

/** `models load|unload <id>`: the model action as a job, followed; a model already loaded draws no bar. */
export async function modelAction(
  client: Client,
  action: 'load' | 'unload',
  id: string,
  json: boolean,
): Promise<number> {
  const loaded =
    action === 'load' && !json ? await client.call<LoadedRuntimeModelList>('GET', '/v1/runtime/loaded') : null;
  const job = await client.call<JobRecord>('POST', `/v1/catalog/models/${encodeURIComponent(id)}/actions/${action}`);
  const already = loaded?.data.some((m) => m.modelId === job.subject) === true;
  const label = `${action === 'load' ? 'Loading' : 'Unloading'} ${id}`;
  return follow(client, job, label, json, already ? `${id} is already loaded.` : undefined);
}

export async function watchJob(client: Client, id: string, json: boolean): Promise<number> {
  const job = await client.call<JobRecord>('GET', `/v1/jobs/${encodeURIComponent(id)}`);
  return follow(client, job, `${job.kind} ${job.subject ?? job.id}`, json);
}
