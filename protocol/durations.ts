// Durations as rate-limit headers write them. Pure; read by the capacity tracker (control/capacity.ts)
// and by Gauge's live-header readings (workers/gauge/live-headers.ts), so both read a header the same way.

/** OpenAI-style durations: `1s`, `20ms`, `6m0s`, `1h2m3.5s`, or plain seconds; milliseconds, or null. */
export function parseDuration(value: string): number | null {
  const trimmed = value.trim();
  if (/^\d+(\.\d+)?$/.test(trimmed)) return Number(trimmed) * 1000;
  const re = /(\d+(?:\.\d+)?)(ms|h|m|s)/gy;
  let total = 0;
  let consumed = 0;
  for (let m = re.exec(trimmed); m !== null; m = re.exec(trimmed)) {
    const n = Number(m[1]);
    total += m[2] === 'ms' ? n : m[2] === 's' ? n * 1000 : m[2] === 'm' ? n * 60_000 : n * 3_600_000;
    consumed = re.lastIndex;
  }
  return consumed === trimmed.length && consumed > 0 ? total : null;
}
