import { startFake, type FakeServer } from '../http.ts';

// A Statuspage-compatible status page on loopback: GET /api/v2/summary.json answers the summary the test set,
// in Atlassian Statuspage's shape (page, status, components, incidents, scheduled_maintenances).

export interface FakeComponent {
  name: string;
  status: 'operational' | 'degraded_performance' | 'partial_outage' | 'major_outage' | 'under_maintenance';
  group?: boolean;
}

export interface FakeIncident {
  name: string;
  status: 'investigating' | 'identified' | 'monitoring' | 'resolved' | 'postmortem';
  impact: 'none' | 'minor' | 'major' | 'critical' | 'maintenance';
  updatedAt: string;
}

export interface FakeSummary {
  indicator: string;
  description: string;
  components: FakeComponent[];
  incidents: FakeIncident[];
  maintenances?: { name: string; status: 'scheduled' | 'in_progress' | 'verifying' | 'completed' }[];
}

export const OPERATIONAL: FakeSummary = {
  indicator: 'none',
  description: 'All Systems Operational',
  components: [
    { name: 'API', status: 'operational' },
    { name: 'ChatGPT', status: 'operational' },
  ],
  incidents: [],
};

function wire(summary: FakeSummary, origin: string): unknown {
  const pageId = 'kctbh9vrtdwd';
  const stamp = '2026-11-24T12:00:00.000Z';
  return {
    page: { id: pageId, name: 'Example', url: origin, time_zone: 'Etc/UTC', updated_at: stamp },
    status: { indicator: summary.indicator, description: summary.description },
    components: summary.components.map((c, i) => ({
      id: `cmp${i}`,
      name: c.name,
      status: c.status,
      created_at: stamp,
      updated_at: stamp,
      position: i + 1,
      description: null,
      showcase: true,
      start_date: null,
      group_id: null,
      page_id: pageId,
      group: c.group ?? false,
      only_show_if_degraded: false,
    })),
    incidents: summary.incidents.map((inc, i) => ({
      id: `inc${i}`,
      name: inc.name,
      status: inc.status,
      impact: inc.impact,
      created_at: inc.updatedAt,
      updated_at: inc.updatedAt,
      monitoring_at: null,
      resolved_at: null,
      shortlink: `https://stspg.io/${i}`,
      started_at: inc.updatedAt,
      page_id: pageId,
      incident_updates: [
        {
          id: `upd${i}`,
          status: inc.status,
          body: 'We are investigating.',
          incident_id: `inc${i}`,
          created_at: inc.updatedAt,
          updated_at: inc.updatedAt,
          display_at: inc.updatedAt,
          affected_components: [],
        },
      ],
      components: [],
    })),
    scheduled_maintenances: (summary.maintenances ?? []).map((m, i) => ({
      id: `mnt${i}`,
      name: m.name,
      status: m.status,
      impact: 'maintenance',
      created_at: stamp,
      updated_at: stamp,
      scheduled_for: stamp,
      scheduled_until: stamp,
      incident_updates: [],
      components: [],
      page_id: pageId,
    })),
  };
}

export interface FakeStatusPage {
  origin: string;
  server: FakeServer;
  /** What every later request answers. */
  setSummary(summary: FakeSummary): void;
  /** The next request gets this raw body with status 200 (a page that is not JSON). */
  rawNext(body: string): void;
  close(): Promise<void>;
}

export async function startFakeStatusPage(): Promise<FakeStatusPage> {
  let summary: FakeSummary = OPERATIONAL;
  let origin = '';
  const server = await startFake({
    routes: { 'GET /api/v2/summary.json': () => ({ status: 200, body: wire(summary, origin) }) },
    notFound: () => ({ status: 404, body: { error: 'Not found' } }),
  });
  origin = server.origin;
  return {
    origin,
    server,
    setSummary: (next) => void (summary = next),
    rawNext: (body) => server.failNext(200, body, { 'content-type': 'text/html' }),
    close: server.close,
  };
}
