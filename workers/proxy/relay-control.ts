import { errors, type Dispatcher } from 'undici';
import { STREAM_WINDOW } from '../../protocol/relay.ts';

// What the proxy worker's message loop holds per relayed call, and what the relay (relay.ts) reads: the
// edge's abort, pause and resume for the client socket's backpressure, the stream window's credit, and the
// chunks of a streamed upload.

/** Relay state the worker's message loop drives: abort, pause/resume, upload chunks. */
export class RelayControl {
  /**
   * The edge's abort, called as `abort.abort()` (relay-worker.ts) as when this was an AbortController. It
   * aborts through undici's controller, so a call that is never aborted costs no signal and no listener.
   */
  readonly abort = { abort: (): void => this.stop() };
  private stopped = false;
  private controller: Dispatcher.DispatchController | null = null;
  private onStop: ((reason: Error) => void) | null = null;
  private paused = false;
  /** Stream bytes posted and not yet credited by the edge; over STREAM_WINDOW the upstream read waits. */
  private uncredited = 0;
  private windowFull = false;
  private upload: (ArrayBuffer | null)[] = [];
  private uploadWake: (() => void) | null = null;

  get aborted(): boolean {
    return this.stopped;
  }
  stop(): void {
    if (this.stopped) return;
    this.stopped = true;
    const reason = new errors.RequestAbortedError();
    this.controller?.abort(reason);
    // Before undici connected there is no controller yet: the relay ends now, and undici aborts on connect.
    this.onStop?.(reason);
    this.cancelWaits();
  }
  /** The upstream call's controller, as undici starts the call: pause, resume and abort go through it. */
  attach(controller: Dispatcher.DispatchController): void {
    this.controller = controller;
    if (this.stopped) controller.abort(new errors.RequestAbortedError());
    else if (this.paused || this.windowFull) controller.pause();
  }
  /** What ends the relay at once on abort, before undici has a controller to abort. */
  whenStopped(onStop: (reason: Error) => void): void {
    this.onStop = onStop;
  }
  /** The call is over: a late pause or resume must not reach a connection undici now uses for another. */
  detach(): void {
    this.controller = null;
    this.onStop = null;
  }
  /** undici stops reading the upstream at its next chunk, until resume (and until the window has room). */
  pause(): void {
    this.paused = true;
    this.controller?.pause();
  }
  resume(): void {
    this.paused = false;
    if (!this.windowFull) this.controller?.resume();
  }
  /** Stream bytes posted to the edge: past STREAM_WINDOW the upstream read waits for credit. */
  posted(bytes: number): void {
    this.uncredited += bytes;
    if (!this.windowFull && this.uncredited > STREAM_WINDOW) {
      this.windowFull = true;
      this.controller?.pause();
    }
  }
  /** The edge wrote this many stream bytes to its client; under half the window, reading goes on. */
  credit(bytes: number): void {
    this.uncredited -= bytes;
    if (this.windowFull && this.uncredited <= STREAM_WINDOW / 2) {
      this.windowFull = false;
      if (!this.paused) this.controller?.resume();
    }
  }
  pushUpload(chunk: ArrayBuffer | null): void {
    this.upload.push(chunk);
    this.uploadWake?.();
    this.uploadWake = null;
  }
  /** The streamed upload as undici's request body; each chunk is acknowledged once undici took it. */
  async *uploadBody(ack: (bytes: number) => void): AsyncGenerator<Uint8Array> {
    for (;;) {
      while (this.upload.length === 0) {
        if (this.stopped) return;
        await new Promise<void>((r) => (this.uploadWake = r));
      }
      const chunk = this.upload.shift()!;
      if (chunk === null) return;
      yield new Uint8Array(chunk);
      ack(chunk.byteLength);
    }
  }
  cancelWaits(): void {
    this.uploadWake?.();
    this.uploadWake = null;
  }
}
