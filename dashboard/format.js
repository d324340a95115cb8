// Formatting shared by the views. Days are local `YYYY-MM-DD`, as the usage routes count them.

const pad = (n) => String(n).padStart(2, '0');

export const dayOf = (date) => `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())}`;

export function parseDay(day) {
  const [y, m, d] = day.split('-').map(Number);
  return new Date(y, m - 1, d);
}

/** Every day from `from` to `to`, both included (the API omits days without traffic; the chart shows them as 0). */
export function daysBetween(from, to) {
  const days = [];
  const end = parseDay(to);
  for (let d = parseDay(from); d <= end; d = new Date(d.getFullYear(), d.getMonth(), d.getDate() + 1))
    days.push(dayOf(d));
  return days;
}

export function addDays(day, n) {
  const d = parseDay(day);
  return dayOf(new Date(d.getFullYear(), d.getMonth(), d.getDate() + n));
}

const integer = new Intl.NumberFormat('en-US');
export const num = (n) => (n === null || n === undefined ? '-' : integer.format(n));
// A cost nothing priced (no catalog price, not in the price database) is null: "no price", not a dash.
export const usd = (n) =>
  n === null || n === undefined ? 'no price' : `$${n < 1 && n > 0 ? n.toFixed(4) : n.toFixed(2)}`;
// What priced the estimated part of a usage row's cost (the estimates of calls that reported none), as
// `catalog + genai-prices@0.1.8`; '' when no source is known. Worded as the CLI's pricedBy (cli/output.ts).
export const pricedBy = (row) =>
  (row.pricingSources ?? [])
    .filter((s) => s.unreportedCalls > 0 && s.source !== null)
    .map((s) => s.source)
    .join(' + ');
export const pct = (n) => (n === null || n === undefined ? '-' : `${(n * 100).toFixed(1)}%`);

export function bytes(n) {
  if (n === null || n === undefined) return '-';
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) {
    n /= 1024;
    i++;
  }
  return `${n.toFixed(i === 0 ? 0 : 1)} ${units[i]}`;
}

/** `2d 3h`, `4h 12m`, `5m 3s`: time until `iso` from `now`, or `now` when past. */
export function countdown(iso, now = Date.now()) {
  if (!iso) return '-';
  let s = Math.round((Date.parse(iso) - now) / 1000);
  if (s <= 0) return 'now';
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  s %= 60;
  if (d > 0) return `${d}d ${h}h`;
  if (h > 0) return `${h}h ${m}m`;
  return `${m}m ${s}s`;
}

export const time = (iso) => (iso ? new Date(iso).toLocaleString() : '-');

// Endpoint family IDs in words, a copy of protocol/words.ts's table (this page cannot import TypeScript; a
// test keeps the two equal). The IDs stay in what the API answers; people read the words.
export const FAMILY_WORDS = {
  'styleA.chat_completions': 'OpenAI-style chat completions',
  'styleA.embeddings': 'OpenAI-style embeddings',
  'styleA.responses': 'OpenAI-style responses',
  'styleA.images': 'OpenAI-style images',
  'styleA.audio_speech': 'OpenAI-style speech',
  'styleA.audio_transcriptions': 'OpenAI-style transcriptions',
  'styleB.messages': 'Anthropic-style messages',
  'rerank.documents': 'reranking',
};

export const familyWords = (family) => FAMILY_WORDS[family] ?? family.replace(/^style[AB]\./, '').replace(/_/g, ' ');
