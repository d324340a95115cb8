import type { GaugeIndicator, GaugeProviderStatus } from '../../../../protocol/gauge.ts';

// Atlassian Statuspage's GET /api/v2/summary.json: `status{indicator: none|minor|major|critical, description}`,
// `components[{name, status, group, ...}]`, unresolved `incidents[{name, status, impact, updated_at, ...}]`,
// `scheduled_maintenances[{status: scheduled|in_progress|verifying|completed, ...}]`. Anything else at that
// path (Instatus, a login page, a partial incident.io page) is not understood and reads as null: `unknown`.

export const MAX_COMPONENTS = 50;
export const MAX_INCIDENTS = 20;
const MAX_NAME = 200;
const MAX_WORD = 40;

const CONTROL = /[\u0000-\u001f\u007f-\u009f]/g;
const INDICATORS: readonly GaugeIndicator[] = ['none', 'minor', 'major', 'critical', 'maintenance'];

function text(value: unknown, max: number): string | null {
  if (typeof value !== 'string') return null;
  const t = value.replace(CONTROL, ' ').trim().slice(0, max);
  return t === '' ? null : t;
}

function isoOrNull(value: unknown): string | null {
  if (typeof value !== 'string' || value.length > 64) return null;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? null : new Date(ms).toISOString();
}

const list = (value: unknown): Record<string, unknown>[] =>
  Array.isArray(value)
    ? value.filter((v): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v))
    : [];

export function parseSummary(body: unknown, providerId: string, observedAt: string): GaugeProviderStatus | null {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return null;
  const summary = body as Record<string, unknown>;
  const status = summary['status'];
  if (typeof status !== 'object' || status === null) return null;
  const raw = (status as Record<string, unknown>)['indicator'];
  let indicator: GaugeIndicator = INDICATORS.includes(raw as GaugeIndicator) ? (raw as GaugeIndicator) : 'unknown';
  if (indicator === 'unknown') return null;
  // Planned work in progress with nothing else wrong is maintenance, not "all clear".
  if (
    indicator === 'none' &&
    list(summary['scheduled_maintenances']).some((m) => m['status'] === 'in_progress' || m['status'] === 'verifying')
  ) {
    indicator = 'maintenance';
  }
  const components = list(summary['components'])
    // Groups only gather their children, whose own statuses are listed.
    .filter((c) => c['group'] !== true)
    .flatMap((c) => {
      const name = text(c['name'], MAX_NAME);
      const state = text(c['status'], MAX_WORD);
      return name === null || state === null ? [] : [{ name, status: state }];
    })
    .slice(0, MAX_COMPONENTS);
  const incidents = list(summary['incidents'])
    .flatMap((i) => {
      const name = text(i['name'], MAX_NAME);
      if (name === null) return [];
      return [
        {
          name,
          status: text(i['status'], MAX_WORD) ?? 'unknown',
          impact: text(i['impact'], MAX_WORD) ?? 'unknown',
          updatedAt: isoOrNull(i['updated_at']),
        },
      ];
    })
    .slice(0, MAX_INCIDENTS);
  return {
    providerId,
    indicator,
    description: text((status as Record<string, unknown>)['description'], MAX_NAME),
    components,
    incidents,
    observedAt,
  };
}

export function unknownStatus(providerId: string, why: string, observedAt: string): GaugeProviderStatus {
  return {
    providerId,
    indicator: 'unknown',
    description: `Status feed unreadable: ${why}.`,
    components: [],
    incidents: [],
    observedAt,
  };
}
