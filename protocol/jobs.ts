import type { ErrorCode } from './errors.ts';

// A job as its readers see it (control/jobs.ts runs them): kept in memory, every move published on the bus.

export const JOB_KINDS = ['load', 'unload', 'benchmark', 'start'] as const;
export type JobKind = (typeof JOB_KINDS)[number];
export const JOB_STATES = ['queued', 'running', 'succeeded', 'failed', 'cancelled'] as const;
export type JobState = (typeof JOB_STATES)[number];
export const TERMINAL_STATES: readonly JobState[] = ['succeeded', 'failed', 'cancelled'];

export interface JobRecord {
  id: string;
  kind: JobKind;
  /** What the job works on (a catalog model ID), at most 512 characters. */
  subject: string | null;
  state: JobState;
  /** 0..1. */
  progress: number;
  result: unknown;
  error: JobError | null;
  createdAt: string;
  startedAt: string | null;
  endedAt: string | null;
}

/** The error envelope's fields, without headers or a status override. */
export interface JobError {
  code: ErrorCode;
  message: string;
  param: string | null;
  details: Record<string, unknown>;
}

export interface JobFilter {
  state?: JobState;
  kind?: JobKind;
  limit: number;
  offset: number;
}
