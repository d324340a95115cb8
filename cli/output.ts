import type { UsageCounters } from '../protocol/http/usage.ts';

// What the CLI prints for a person: aligned tables (as `ollama list` and `docker ps` do), and a progress
// bar redrawn in place on a terminal. `--json` output bypasses all of this.

export interface Column<T> {
  header: string;
  /** The cell's text; null or undefined prints as `-` (cell). */
  value(row: T): string | null | undefined;
  /** Numbers read better right-aligned. */
  right?: boolean;
}

/** A line on stdout. */
export const say = (line: string) => void process.stdout.write(line + '\n');
/** `--json`: the API's answer as it came, indented. */
export const printJson = (value: unknown) => void process.stdout.write(JSON.stringify(value, null, 2) + '\n');
/** An ID as one path segment of an API route. */
export const path = (id: string) => encodeURIComponent(id);

/** Printable: control characters from a name a client chose cannot move the cursor or clear the screen. */
export function cell(value: unknown): string {
  if (value === null || value === undefined || value === '') return '-';
  return String(value).replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
}

export function table<T>(rows: readonly T[], columns: readonly Column<T>[], empty: string): string {
  if (rows.length === 0) return `${empty}\n`;
  const cells = rows.map((r) => columns.map((c) => cell(c.value(r))));
  const widths = columns.map((c, i) => Math.max(c.header.length, ...cells.map((row) => row[i]!.length)));
  const line = (values: string[]) =>
    values
      .map((v, i) => (columns[i]!.right ? v.padStart(widths[i]!) : v.padEnd(widths[i]!)))
      .join('   ')
      .trimEnd();
  return [line(columns.map((c) => c.header)), ...cells.map(line)].join('\n') + '\n';
}

/** Binary units (KiB, MiB, GiB), as the dashboard (dashboard/format.js) and the service's messages use. */
export function bytes(n: number | null | undefined): string {
  if (typeof n !== 'number' || !Number.isFinite(n)) return '-';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let v = n;
  let u = 0;
  while (v >= 1024 && u < units.length - 1) {
    v /= 1024;
    u++;
  }
  return `${u === 0 ? v : v.toFixed(1)} ${units[u]}`;
}

export function count(n: number | null | undefined): string {
  return typeof n === 'number' && Number.isFinite(n) ? n.toLocaleString('en-US') : '-';
}

export function usd(n: number | null | undefined): string {
  return typeof n === 'number' && Number.isFinite(n) ? `$${n.toFixed(n < 1 ? 4 : 2)}` : '-';
}

/** A cost: "no price" when nothing priced it (no catalog price, not in the price database). */
export function cost(n: number | null | undefined): string {
  return typeof n === 'number' && Number.isFinite(n) ? usd(n) : 'no price';
}

/** A usage answer's cost fields; `pricingSources` is absent from a service older than it. */
type UsageCost = Partial<Pick<UsageCounters, 'costUsd' | 'costEstimated' | 'pricingSources'>>;

/**
 * What priced the estimated part of a usage row's `costUsd`, as `catalog + genai-prices@0.1.8`: the sources of
 * the estimates of calls that reported no cost (a reported cost is a bill, whatever else priced it); '' when none
 * is known (a bill, or estimates stored before their source was). dashboard/format.js words it alike.
 */
export function pricedBy(row: UsageCost): string {
  const names = (row.pricingSources ?? []).filter((s) => s.unreportedCalls > 0 && s.source !== null);
  return names.map((s) => s.source).join(' + ');
}

/** A usage row's cost, marked when part of it is an estimate: `$0.0123 (estimated: genai-prices@0.1.8)`. */
export function usageCost(row: UsageCost): string {
  if (!row.costEstimated) return cost(row.costUsd);
  const by = pricedBy(row);
  return `${cost(row.costUsd)} (estimated${by === '' ? '' : `: ${by}`})`;
}

/** `in 4 minutes`, `2 hours ago`, from an ISO time. */
export function relative(iso: string | null | undefined, now = Date.now()): string {
  if (!iso) return '-';
  const ms = Date.parse(iso);
  if (!Number.isFinite(ms)) return '-';
  const diff = ms - now;
  const abs = Math.abs(diff);
  const [n, unit] =
    abs < 60_000
      ? [Math.round(abs / 1000), 'second']
      : abs < 3_600_000
        ? [Math.round(abs / 60_000), 'minute']
        : abs < 86_400_000
          ? [Math.round(abs / 3_600_000), 'hour']
          : [Math.round(abs / 86_400_000), 'day'];
  const text = `${n} ${unit}${n === 1 ? '' : 's'}`;
  return diff >= 0 ? `in ${text}` : `${text} ago`;
}

export interface Progress {
  update(fraction: number): void;
  /** The full bar, then `line`. */
  done(line: string): void;
  /** Ends the bar where it stands; `line` goes to stderr. */
  fail(line: string): void;
}

/**
 * On a terminal: `label [#####-----]  42%`, redrawn with a carriage return (only when the percent changes).
 * Elsewhere (a pipe, a log file): a plain line per 10% step, so a script's output stays readable.
 */
export function progressBar(label: string, out: NodeJS.WriteStream = process.stdout, width = 30): Progress {
  const tty = out.isTTY === true;
  let shown = -1;
  const frame = (pct: number) => {
    const filled = Math.round((pct / 100) * width);
    return `${label} [${'#'.repeat(filled)}${'-'.repeat(width - filled)}] ${String(pct).padStart(3)}%`;
  };
  return {
    update(fraction) {
      const pct = Math.max(0, Math.min(100, Math.floor(fraction * 100)));
      if (tty) {
        if (pct === shown) return;
        shown = pct;
        out.write(`\r${frame(pct)}`);
      } else if (Math.floor(pct / 10) > Math.floor(shown / 10) || shown < 0) {
        shown = pct;
        out.write(`${label} ${pct}%\n`);
      }
    },
    done(line) {
      out.write(tty ? `\r${frame(100)}\n${line}\n` : `${line}\n`);
    },
    fail(line) {
      if (tty && shown >= 0) out.write('\n');
      process.stderr.write(`${line}\n`);
    },
  };
}
