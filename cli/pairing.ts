import type { ListAnswer, TokenCreated } from '../protocol/http/answers.ts';
import type { PairingView } from '../protocol/http/service-accounts.ts';
import type { TokenView } from '../protocol/http/tokens.ts';
import { type Answer, CliError, EXIT, envelopeMessage, readEvents, type Client } from './client.ts';
import { cell, relative, table } from './output.ts';

// `switchyard pair` asks the running service for a token as an app would (a pairing request from loopback,
// no token needed) and waits for a person to approve it; `switchyard approve` is that person's side.
// The secret goes to stdout alone, once (`TOKEN=$(switchyard pair)`); everything said to the person goes to
// stderr.

const say = (line: string) => process.stderr.write(line + '\n');

export async function pair(client: Client, json: boolean, name: string, scopes: string[] | null): Promise<number> {
  const res = await client.send('POST', '/v1/pairing/requests', { clientName: name, ...(scopes && { scopes }) }, false);
  if (res.status !== 200) {
    let body: { error?: { message?: string } } | null = null;
    try {
      body = JSON.parse(await res.text());
    } catch {
      body = null;
    }
    throw new CliError(body?.error?.message ?? `The pairing request was refused (HTTP ${res.status}).`, EXIT.failed);
  }
  for await (const frame of readEvents(res)) {
    // Each event's data as control/pairing.ts sends it: pending, then approved (the token), denied or expired.
    const data = frame.data as Pick<PairingView, 'id' | 'userCode' | 'expiresAt'> & TokenCreated;
    switch (frame.event) {
      case 'pairing.pending':
        say(
          `Pairing request ${data.userCode} for "${name}" is waiting for approval (expires ` +
            `${relative(data.expiresAt)}).`,
        );
        say(`Approve it with: switchyard approve ${data.userCode}`);
        break;
      case 'pairing.approved':
        if (json) process.stdout.write(JSON.stringify(data, null, 2) + '\n');
        else {
          say(`Approved: token ${data.token.id} with scopes ${data.token.scopes.join(', ')}. Its secret (shown once):`);
          process.stdout.write(`${data.secret}\n`);
        }
        return EXIT.ok;
      case 'pairing.denied':
      case 'pairing.expired':
        say(`The pairing request was ${frame.event === 'pairing.denied' ? 'denied' : 'not approved in time'}.`);
        if (json) process.stdout.write(JSON.stringify({ event: frame.event, ...data }, null, 2) + '\n');
        return EXIT.failed;
    }
  }
  throw new CliError('The service ended the pairing request without an answer.', EXIT.failed);
}

/** Without `which`: the pending requests. With it (an ID or a user code): approve, or deny. */
export async function approve(
  client: Client,
  json: boolean,
  which: string | null,
  deny: boolean,
  scopes: string[] | null,
): Promise<number> {
  const pending = await client.call<ListAnswer<PairingView>>('GET', '/v1/pairing/requests');
  if (which === null) {
    if (json) return (process.stdout.write(JSON.stringify(pending, null, 2) + '\n'), EXIT.ok);
    process.stdout.write(
      table(
        pending.data,
        [
          { header: 'CODE', value: (r) => r.userCode },
          { header: 'CLIENT', value: (r) => r.clientName },
          { header: 'SCOPES', value: (r) => r.scopes.join(',') },
          { header: 'EXPIRES', value: (r) => relative(r.expiresAt) },
          { header: 'ID', value: (r) => r.id },
        ],
        'No pairing requests are waiting.',
      ),
    );
    return EXIT.ok;
  }
  const wanted = which.trim().toUpperCase();
  const request = pending.data.find((r) => r.id === which || r.userCode === wanted);
  // One that is not waiting goes to the service too: it says whether it was approved or denied already (409).
  const target = request?.id ?? which.trim();
  const path = `/v1/pairing/requests/${encodeURIComponent(target)}/${deny ? 'deny' : 'approve'}`;
  const res = await client.send('POST', path, deny ? undefined : scopes ? { scopes } : {});
  const answer = await jsonOf(res);
  const refusal = envelopeMessage(answer);
  if (res.status === 404 || (res.status >= 300 && refusal === undefined))
    throw new CliError(`No pairing request with the code or ID "${which.slice(0, 80)}" is waiting.`, EXIT.failed);
  if (res.status >= 300) throw new CliError(refusal!, EXIT.failed);
  // The result is what the command was for: stdout, as every command's answer. A 2xx answer is the decision.
  if (json) process.stdout.write(JSON.stringify(answer, null, 2) + '\n');
  else {
    const who = request ? `${request.userCode} ("${cell(request.clientName)}")` : answer!.id;
    process.stdout.write(deny ? `Denied ${who}.\n` : `Approved ${who}: token ${answer!.token!.id}.\n`);
  }
  return EXIT.ok;
}

/** What approve (`token`: the new token) and deny answer; refused, an error envelope (envelopeMessage). */
interface PairingDecision {
  id: string;
  token?: TokenView;
}

/** The answer's JSON; undefined when it is not JSON. */
async function jsonOf(res: Answer): Promise<PairingDecision | undefined> {
  try {
    return JSON.parse(await res.text());
  } catch {
    return undefined;
  }
}
