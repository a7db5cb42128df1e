import { RetryableError } from '@agentq/shared/core';

/**
 * Bounds one streamed model call: its whole duration (`totalMs`, headers and body alike) and,
 * once the stream has begun, the silence between two chunks (`idleMs`). A provider that sends
 * its headers and then drips, or nothing more, would otherwise hold the step for ever. The
 * call's signal aborts when either runs out or the caller's `signal` aborts; `expired` then
 * says which bound it was and is the error to retry the step with.
 */
export class StreamBounds {
  expired: RetryableError | null = null;
  private readonly ctrl = new AbortController();
  private readonly total: NodeJS.Timeout;
  private idle?: NodeJS.Timeout;
  /** The caller's abort passed on (a listener, not AbortSignal.any: one call's worth of less work). */
  private readonly onCallerAbort?: () => void;

  constructor(private readonly o: { totalMs: number; idleMs: number; signal?: AbortSignal }) {
    const caller = o.signal;
    if (caller?.aborted) this.ctrl.abort(caller.reason);
    else if (caller) {
      this.onCallerAbort = () => this.ctrl.abort(caller.reason);
      caller.addEventListener('abort', this.onCallerAbort, { once: true });
    }
    this.total = setTimeout(
      () => this.expire(`the model step took longer than ${o.totalMs} ms (MODEL_TIMEOUT_MS)`),
      o.totalMs,
    );
  }

  /** Aborts when the caller's signal does or a bound runs out. */
  get signal(): AbortSignal {
    return this.ctrl.signal;
  }

  /**
   * The step stops reading for a while of its own accord (waiting for room for its answer): the
   * provider's silence is not what keeps the stream quiet, so the idle bound stops until `touch`.
   */
  pauseIdle(): void {
    clearTimeout(this.idle);
    this.idle = undefined;
  }

  /** A chunk arrived (or the stream began): the idle bound starts again (one timer, restarted). */
  touch(): void {
    if (this.idle) this.idle.refresh();
    else
      this.idle = setTimeout(
        () => this.expire(`the model stream sent nothing for ${this.o.idleMs} ms (MODEL_IDLE_TIMEOUT_MS)`),
        this.o.idleMs,
      );
  }

  dispose(): void {
    clearTimeout(this.total);
    clearTimeout(this.idle);
    if (this.onCallerAbort) this.o.signal?.removeEventListener('abort', this.onCallerAbort);
  }

  private expire(why: string): void {
    if (this.expired || this.o.signal?.aborted) return;
    this.expired = new RetryableError(why, 'model_timeout');
    this.ctrl.abort(this.expired);
  }
}
