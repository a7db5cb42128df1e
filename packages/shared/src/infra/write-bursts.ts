import type { Writable } from 'node:stream';

const coalesced = new WeakSet<Writable>();

/**
 * Makes a socket (a Redis connection) send what is written to it in bursts instead of one
 * system call per write.
 *
 * - A turn's first burst (the commands written before the promise callbacks queued with them
 *   have run: a tool result and BullMQ's completion of its job, say) leaves in one write as soon
 *   as those callbacks are done. Nothing waits for I/O or a timer: one run at a time, a command
 *   leaves as early as it would uncoalesced.
 * - What the rest of the same turn of the event loop writes (other runs' steps and calls, whose
 *   replies, model answers and tool results arrived in the same poll) is held until that turn
 *   ends (`setImmediate`) and leaves in one write.
 *
 * The reader then wakes once for each burst, not once per write: for Redis (which reads, runs,
 * replies and appends to its AOF at each wake-up) that is, under load, most of what a command
 * costs it beside the command itself. The order of the bytes is the order they were written, as
 * without it.
 */
export function coalesceWrites(socket: Writable | undefined | null): void {
  if (!socket || coalesced.has(socket)) return;
  coalesced.add(socket);
  const write = socket.write;
  let held = false; // corked here, with its release queued
  let turnBusy = false; // a burst already left in this turn
  const release = () => {
    if (!held) return;
    held = false;
    socket.uncork();
  };
  const endTurn = () => {
    turnBusy = false;
    release();
  };
  socket.write = function coalescingWrite(this: Writable, ...args: unknown[]): boolean {
    if (!held && !socket.destroyed) {
      held = true;
      socket.cork();
      if (!turnBusy) {
        turnBusy = true;
        process.nextTick(release);
        setImmediate(endTurn);
      }
    }
    return (write as (...a: unknown[]) => boolean).apply(socket, args);
  } as Writable['write'];
}
