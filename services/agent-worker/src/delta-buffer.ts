/**
 * Coalesces streamed text into one event per interval, so a long answer costs a few dozen
 * stream entries instead of one per token, while clients still see text before the step ends.
 */
export class DeltaBuffer {
  private text = '';
  private timer: NodeJS.Timeout | null = null;

  constructor(
    private readonly flushFn: (text: string) => void,
    private readonly intervalMs = 50,
  ) {}

  push(text: string): void {
    this.text += text;
    this.timer ??= setTimeout(() => this.flush(), this.intervalMs);
  }

  flush(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = null;
    if (!this.text) return;
    const t = this.text;
    this.text = '';
    this.flushFn(t);
  }
}
