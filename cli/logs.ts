import { setTimeout as sleep } from 'node:timers/promises';
import type { LogLine, LogPage } from '../protocol/http/answers.ts';
import type { Client } from './client.ts';
import { cell } from './output.ts';

// `switchyard logs`: the service's newest log lines (GET /v1/logs), as `time level message key=value` for a
// person or one JSON object a line with --json; --follow asks every second for the lines after the last one
// (leaving out the request lines of those polls).

const LEVELS: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };
const SKIP = new Set(['level', 'time', 'msg', 'service', 'pid', 'hostname']);
const FOLLOW_EVERY_MS = 1000;
const OWN_ROUTE = 'GET /v1/logs';

function human(entry: Record<string, unknown>): string {
  const level = LEVELS[entry.level as number] ?? String(entry.level ?? '-');
  const fields = Object.entries(entry)
    .filter(([k]) => !SKIP.has(k))
    .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
    .join(' ');
  return cell(`${entry.time ?? '-'} ${level.padEnd(5)} ${entry.msg ?? ''}${fields ? `  ${fields}` : ''}`);
}

export async function logs(client: Client, json: boolean, lines: number, followOn: boolean): Promise<number> {
  const write = (entries: LogLine[]) => {
    for (const { entry } of entries) process.stdout.write((json ? JSON.stringify(entry) : human(entry)) + '\n');
  };
  const first = await client.call<LogPage>('GET', `/v1/logs?limit=${lines}`);
  write(first.data);
  if (!followOn) return 0;
  let after: number = first.lastSeq;
  for (;;) {
    await sleep(FOLLOW_EVERY_MS);
    let page: LogPage;
    do {
      page = await client.call<LogPage>('GET', `/v1/logs?after=${after}&limit=1000`);
      if (page.lastSeq < after) {
        // Numbers start again when the service does.
        process.stderr.write('(the service restarted)\n');
        after = 0;
        continue;
      }
      if (page.lost > 0) process.stderr.write(`(${page.lost} lines were no longer kept)\n`);
      // Its own polls would fill the screen: one request line a second.
      write(page.data.filter((l) => !(l.entry.msg === 'request' && l.entry.route === OWN_ROUTE)));
      if (page.data.length > 0) after = page.data[page.data.length - 1]!.seq;
      else after = Math.max(after, page.lastSeq);
    } while (page.hasMore);
  }
}
