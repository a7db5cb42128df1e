import type { RunState, StepInput } from '@agentq/shared/store';
import type { AgentStepDeps } from './agent-step-processor.js';
import type { TranscriptRoom, TranscriptsInFlight } from './transcripts-in-flight.js';

/**
 * What a step that holds the start of its transcript takes room for beyond it, before reading
 * what was added (its assistant message and a round's tool messages: a round of two calls with
 * TOOL_OUTPUT_MAX_BYTES' 100 KB each fits).
 */
const ADDED_GUESS_BYTES = 256 * 1024;

/**
 * The step's input, read within room for its transcript when the worker bounds transcripts in
 * flight. A step that holds the start of its transcript (the cache) takes room for it and what a
 * round usually adds, and reads as without a bound (one round trip); so does a step told its
 * transcript's size by its job (`toldBytes`: at creation, or before the previous step), when that
 * fits what it took. Otherwise, or when the transcript turns out larger, it reads the
 * transcript's size first and, once room for that size is free, the step's whole input again
 * (what it read before waiting may be stale). A step never waits for room while holding some, so
 * steps cannot wait on each other for ever.
 */
export async function readStepInput(
  deps: Pick<AgentStepDeps, 'store' | 'transcripts' | 'inFlight'>,
  runId: string,
  depth: number,
  signal?: AbortSignal,
  toldBytes?: number,
): Promise<{ input: StepInput | null; room?: TranscriptRoom } | { tooLarge: { run: RunState; size: number } }> {
  const { transcript } = deps.store;
  const known = deps.transcripts?.get(runId);
  const bound = deps.inFlight;
  if (!bound) return { input: await transcript.loadStep(runId, depth, known) };
  const told = known ? undefined : toldBytes;
  const guess = await bound.take(Math.min(bound.capacity, (known?.size ?? told ?? 0) + ADDED_GUESS_BYTES), signal);
  // Without a start held or a size told that fits: the size first, the messages only if they
  // fit (two round trips).
  const read = await transcript
    .loadStepWithin(runId, depth, guess.bytes, known, told !== undefined && told <= guess.bytes)
    .catch((err: unknown) => {
      guess.release();
      throw err;
    });
  if (!read || !('tooLarge' in read)) return holding(bound, guess, read);
  guess.release();
  // A size is stored: a transcript without one is read whatever its size.
  const size = read.head.size!;
  if (size > bound.capacity) return { tooLarge: { run: read.head.run, size } };
  const room = await bound.take(size, signal);
  const input = await transcript.loadStep(runId, depth, known).catch((err: unknown) => {
    room.release();
    throw err;
  });
  return holding(bound, room, input);
}

/**
 * The input read, holding room for exactly its transcript as read (none if the run is gone);
 * a transcript found larger than the bound (its stored size was not known) is not kept.
 */
function holding(
  bound: TranscriptsInFlight,
  room: TranscriptRoom,
  input: StepInput | null,
): { input: StepInput | null; room?: TranscriptRoom } | { tooLarge: { run: RunState; size: number } } {
  if (!input) {
    room.release();
    return { input };
  }
  if (input.size > bound.capacity) {
    room.release();
    return { tooLarge: { run: input.run, size: input.size } };
  }
  room.resize(input.size);
  return { input, room };
}
