import { CallTable } from '../../protocol/call-table.ts';
import type { UsageEvent } from '../../protocol/gateway.ts';
import {
  meteredEvent,
  meteredLine,
  meteredOutcome,
  type AbortReason,
  type FromWorker,
  type LastMessage,
  type RelayRequest,
} from '../../protocol/relay.ts';

// A relay worker's metering of the calls whose request carries `meter` (W3.2): at a call's last message it
// makes the call's usage event and `usage` log line, where the usage is, and keeps them until the worker's
// next batch leaves; the edge then only hands the batch's events on. No timer and no message of its own.

interface Metered {
  req: RelayRequest;
  reason: AbortReason | null;
}

export class CallMeter {
  private readonly calls = new CallTable<Metered>();
  private events: UsageEvent[] = [];
  private lines = '';

  /** `lineBase`: the edge logger's base fields, for the lines; null when its log is quieter than info. */
  constructor(private readonly lineBase: string | null) {}

  start(id: number, req: RelayRequest): void {
    if (req.meter !== undefined) this.calls.set(id, { req, reason: null });
  }

  /** The edge stopped the call, for this reason. */
  stopped(id: number, reason: AbortReason | undefined): void {
    const call = this.calls.get(id);
    if (call !== undefined && reason !== undefined) call.reason = reason;
  }

  /** A message is being posted: a metered call's last one ends its metering. */
  posted(m: FromWorker): void {
    if (this.calls.size === 0 || (m.t !== 'whole' && m.t !== 'end' && m.t !== 'error' && m.t !== 'aborted')) return;
    const call = this.calls.get(m.id);
    if (call === undefined) return;
    this.calls.delete(m.id);
    const last = m as LastMessage;
    const usage = last.t === 'whole' || last.t === 'end' ? last.end.usage : last.usage;
    const event = meteredEvent(call.req, meteredOutcome(last, call.reason), usage);
    this.events.push(event);
    if (this.lineBase !== null) this.lines += meteredLine(this.lineBase, event);
  }

  /** The events (and lines) made since the last call, as the batch's `usage` message; null when none. */
  take(): FromWorker | null {
    if (this.events.length === 0) return null;
    const message: FromWorker = { t: 'usage', events: this.events, lines: this.lines };
    this.events = [];
    this.lines = '';
    return message;
  }
}
