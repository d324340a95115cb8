import type { ThreadCpu } from './thread-cpu.ts';

// One wrk run as the bench's Lua script reports it (bench/lua), read by report.ts and report-threads.ts.

export interface WrkResult {
  requests: number;
  duration_us: number;
  bytes: number;
  p50_us: number;
  p90_us: number;
  p99_us: number;
  mean_us: number;
  max_us: number;
  err_connect: number;
  err_read: number;
  err_write: number;
  err_status: number;
  err_timeout: number;
  cpu_s: number;
  /** The target's own threads' CPU seconds by class over the run, for the targets split (report-threads.ts). */
  threads?: ThreadCpu;
}
