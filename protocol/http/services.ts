import { Type, type Static } from '@sinclair/typebox';
import { compile } from '../validate.ts';
import { TuningSchema } from './settings.ts';

// Supervised runtime processes (/v1/services): a llama-server the service spawns, and the embedded runtime.

export const SERVICE_KINDS = ['llamacpp', 'embedded'] as const;
export type ServiceKind = (typeof SERVICE_KINDS)[number];

/**
 * `restarting`: the process died (or stopped answering its health check) and starts again after a delay;
 * `failed`: it died before it was ever healthy too many times in a row, and waits for a person.
 */
export const SERVICE_STATES = ['stopped', 'starting', 'running', 'restarting', 'stopping', 'failed'] as const;
export type ServiceState = (typeof SERVICE_STATES)[number];

/** Why the last process ended, from a fixed vocabulary (never a path or the process's own output). */
export const SERVICE_EXIT_REASONS = [
  'exited',
  'health_check_failed',
  'start_timeout',
  'spawn_failed',
  'binary_missing',
  'model_missing',
  'memory_busy',
  'stopped',
] as const;
export type ServiceExitReason = (typeof SERVICE_EXIT_REASONS)[number];

const Id = Type.String({ pattern: '^[a-z0-9][a-z0-9-]{0,62}$' });
const DisplayName = Type.String({ minLength: 1, maxLength: 100 });
/** A library name as GET /v1/runtime/models lists it. */
const ModelName = Type.String({ minLength: 1, maxLength: 1024 });
const Overrides = Type.Partial(TuningSchema, { additionalProperties: false });

export const ServiceCreateSchema = Type.Object(
  {
    id: Type.Optional(Id),
    kind: Type.Literal('llamacpp'),
    displayName: Type.Optional(DisplayName),
    model: ModelName,
    tuning: Type.Optional(Overrides),
    /** 0 or absent: a free loopback port, chosen once and kept. */
    port: Type.Optional(Type.Integer({ minimum: 0, maximum: 65_535 })),
    /** An absolute path to a `llama-server` executable; absent: the first on PATH. Write-only. */
    binary: Type.Optional(Type.String({ minLength: 1, maxLength: 4096 })),
    /** Start it now and whenever the service starts (default true). */
    autoStart: Type.Optional(Type.Boolean()),
  },
  { additionalProperties: false },
);
export type ServiceCreate = Static<typeof ServiceCreateSchema>;
export const checkServiceCreate = compile(ServiceCreateSchema);

export interface ServiceExit {
  reason: ServiceExitReason;
  /** The process's exit status or signal, when it exited. */
  code: number | null;
  signal: string | null;
  at: string;
}

export interface ServiceView {
  id: string;
  kind: ServiceKind;
  displayName: string;
  state: ServiceState;
  /** Whether a person (or autoStart) wants it running. */
  desired: 'running' | 'stopped';
  /** llamacpp: the library name it serves. */
  model: string | null;
  /** llamacpp: settings' runtime.tuning with this service's overrides, as passed to the process. */
  tuning: Static<typeof TuningSchema> | null;
  /** The service's own overrides. */
  tuningOverrides: Static<typeof Overrides> | null;
  /** llamacpp: where it listens (loopback), the base URL for a `llamacpp` provider. */
  url: string | null;
  port: number | null;
  /** The executable's name, never its directory; `configured` when the record names one. */
  binary: { name: string; source: 'path' | 'configured' } | null;
  pid: number | null;
  /** Restarts after a death or a failed health check since the last start a person asked for. */
  restarts: number;
  /** When the next start is due, while `restarting`. */
  nextStartAt: string | null;
  lastExit: ServiceExit | null;
  startedAt: string | null;
  readyAt: string | null;
  /** embedded: how many models it holds now. */
  loadedModels?: number;
  actions: ('start' | 'stop' | 'restart')[];
  createdAt: string | null;
  updatedAt: string | null;
}
