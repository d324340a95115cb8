import { ServiceError } from '../../protocol/errors.ts';
import { readQuery } from '../../protocol/query.ts';
import { EVENT_TYPES, parseEventId, sseFrame, type EventType } from '../../protocol/events.ts';
import { JOB_KINDS, JOB_STATES } from '../../protocol/jobs.ts';
import type { EventsPort, JobsPort } from '../../protocol/ports/jobs.ts';
import { SSE_HEADERS, streamEvents } from '../http/event-stream.ts';
import { route, type RouteDef } from '../http/router.ts';
import type { EdgeRequest } from '../http/types.ts';

// Jobs and the server-sent event streams (docs/api.md "Jobs and events"). A stream subscribes while its
// request is handled, so no event published after the request arrived can fall between the answer and the
// subscription.

export interface JobRouteDeps {
  jobs: JobsPort;
  bus: EventsPort;
  keepAliveMs?: number;
}

function lastEventId(req: EdgeRequest): number | null {
  const raw = req.headers['last-event-id'];
  const id = parseEventId(raw?.trim());
  if (id === undefined)
    throw new ServiceError(
      'INVALID_REQUEST',
      '`Last-Event-ID` must be an event ID this service sent: decimal digits, at most 16.',
      { param: 'Last-Event-ID' },
    );
  return id;
}

function eventTypes(raw: string | undefined): EventType[] | null {
  if (raw === undefined) return null;
  const names = raw.split(',');
  const known = EVENT_TYPES as readonly string[];
  if (names.length > EVENT_TYPES.length || names.some((n) => !known.includes(n))) {
    throw new ServiceError('INVALID_REQUEST', `\`types\` is a comma-separated list of: ${EVENT_TYPES.join(', ')}.`, {
      param: 'types',
    });
  }
  return names as EventType[];
}

export function jobRoutes({ jobs, bus, keepAliveMs }: JobRouteDeps): RouteDef[] {
  return [
    route({
      method: 'GET',
      path: '/v1/jobs',
      scope: 'read',
      handle: async ({ req }) => {
        const q = readQuery(req.query, ['state', 'kind', 'limit', 'offset']);
        const filter = {
          state: q.oneOf('state', JOB_STATES),
          kind: q.oneOf('kind', JOB_KINDS),
          limit: q.int('limit', 1, 200, 50),
          offset: q.int('offset', 0, 1_000_000, 0),
        };
        const { data, hasMore } = await jobs.list(filter);
        return { body: { data, limit: filter.limit, offset: filter.offset, hasMore } };
      },
    }),
    route({
      method: 'GET',
      path: '/v1/jobs/:id',
      scope: 'read',
      handle: async ({ req, params }) => {
        readQuery(req.query, []);
        return { body: await jobs.get(params.id!) };
      },
    }),
    route({
      method: 'POST',
      path: '/v1/jobs/:id/cancel',
      scope: 'manage',
      handle: async ({ req, params }) => {
        readQuery(req.query, []);
        return { body: await jobs.cancel(params.id!) };
      },
    }),
    route({
      method: 'GET',
      path: '/v1/jobs/:id/events',
      scope: 'read',
      handle: async ({ req, params }) => {
        readQuery(req.query, []);
        const job = await jobs.get(params.id!);
        const after = lastEventId(req);
        const terminal = await jobs.terminalEventId(job.id);
        if (terminal !== null && after !== null && after >= terminal && after <= (await bus.lastId())) {
          // The client saw the job end: nothing is left to send.
          return { stream: (out) => (out.head(200, { ...SSE_HEADERS }), out.end()) };
        }
        if (terminal !== null && !(await bus.holds(terminal))) {
          // The ring has moved past this job: its end, as it is now, without an ID to resume from.
          return { stream: (out) => (out.head(200, { ...SSE_HEADERS }), out.end(sseFrame(`job.${job.state}`, job))) };
        }
        const sub = await bus.subscribe({ after, replayAll: true, jobId: job.id });
        return { stream: (out) => streamEvents(out, sub, keepAliveMs) };
      },
    }),
    route({
      method: 'GET',
      path: '/v1/events',
      scope: 'read',
      handle: async ({ req }) => {
        const q = readQuery(req.query, ['types']);
        const types = eventTypes(q.string('types', 400));
        const after = lastEventId(req);
        const sub = await bus.subscribe({ after, types });
        return { stream: (out) => streamEvents(out, sub, keepAliveMs) };
      },
    }),
  ];
}
