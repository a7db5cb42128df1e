/** The most text one event carries (characters): more is sent at once rather than at the interval. */
const MAX_EVENT_CHARS = 256 * 1024;

/**
 * Coalesces streamed text into one event per interval, so a long answer costs a few dozen
 * stream entries instead of one per token, while clients still see text before the step ends.
 * An event carries at most MAX_EVENT_CHARS or so: a provider that streams fast (or a worker
 * too busy to run the interval's timer) would otherwise make events of megabytes, each copied
 * several times over on its way to Redis while the answer itself is held.
 */
export class DeltaBuffer {
  private text = '';
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly flushFn: (text: string) => void,
    private readonly intervalMs = 50,
    private readonly maxChars = MAX_EVENT_CHARS,
  ) {}

  push(text: string): void {
    this.text += text;
    if (this.text.length >= this.maxChars) this.flush();
    else this.timer ??= setTimeout(() => this.flush(), this.intervalMs);
  }

  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (!this.text) return;
    const t = this.text;
    this.text = '';
    // A piece longer than an event goes out as several, never cut between the halves of a surrogate pair.
    for (let at = 0; at < t.length; ) {
      let end = Math.min(at + this.maxChars, t.length);
      if (end < t.length && end - 1 > at && isHighSurrogate(t.charCodeAt(end - 1))) end--;
      this.flushFn(at === 0 && end === t.length ? t : t.slice(at, end));
      at = end;
    }
  }
}

const isHighSurrogate = (code: number) => code >= 0xd800 && code <= 0xdbff;
