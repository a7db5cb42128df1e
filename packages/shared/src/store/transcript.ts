import type { RedisClient } from '../infra/redis.js';
import type { AssistantMessage, ChatMessage } from '../core/schemas/message.js';
import { isTerminal, type BudgetName, type RunStatus } from '../core/schemas/run.js';
import { USAGE_FIELDS } from '../core/schemas/usage.js';
import { runKeys, RUN_FIELDS as F } from './keys.js';
import { redisScript } from './redis-script.js';
import { eventJson, type RunEventData } from './run-events.js';
import { heldSpecFrom, runStateFrom, type HeldSpec, type RunHash, type RunState } from './run-hash.js';

/** A model step as stored: the assistant message and what it cost. */
export interface StepRecord {
  depth: number;
  status: 'completed';
  model: string;
  /** With `cost_usd` when the price of the model is known. */
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number; cost_usd?: number };
  started_at: string;
  completed_at: string;
  message: AssistantMessage;
  /** Set when the call was made with tools disabled because a budget ran out. */
  budget?: BudgetName;
  /** A final answer that failed the run's response_format: why (the run repairs it or fails). */
  error?: { code: string; message: string };
  /** A step that repairs an answer that failed the response_format: which repair (1, 2, …). */
  repair?: number;
}

/** Commits a model step once per depth (see commit-step.lua). */
const commitStep = redisScript({
  file: 'commit-step',
  keys: (k: {
    runKey: string;
    messagesKey: string;
    stepsKey: string;
    eventsKey: string;
    ancestorRunKeys: string[];
  }) => [k.runKey, k.messagesKey, k.stepsKey, k.eventsKey, ...k.ancestorRunKeys],
  args: (a: {
    depth: number;
    message: string;
    step: string;
    promptTokens: number;
    completionTokens: number;
    totalTokens: number;
    completedEvent: string;
    /** Nano-dollars, or '' when the price is not known. */
    costNanos: number | '';
  }) => [a.depth, a.message, a.step, a.promptTokens, a.completionTokens, a.totalTokens, a.completedEvent, a.costNanos],
  reply: (r) => r as string | null | 0,
});

/**
 * The start of a run's transcript that a reader already holds. A transcript only ever grows at
 * its end, so a reader that holds its first messages reads only what came after them.
 */
export interface TranscriptPrefix {
  /** The run's creation time: a run deleted and created again under its id is another transcript. */
  createdAt: string;
  messages: readonly ChatMessage[];
  /** The size of those messages as stored (bytes of JSON): what holding them costs. */
  size: number;
  /** The run's spec, which never changes once the run is created: held, it is not read again. */
  spec?: HeldSpec;
}

/**
 * The run fields a step reads besides its spec and its depth's markers: HMGET, not HGETALL, since
 * the run hash grows by two markers a step, and the spec, which never changes, is read only by a
 * reader that does not hold it.
 */
const STEP_RUN_FIELDS = [
  F.status,
  F.depth,
  F.tenant,
  F.parentRunId,
  F.rootRunId,
  F.createdAt,
  F.transcriptBytes,
  ...USAGE_FIELDS.map((f) => `${F.usagePrefix}${f}`),
  ...USAGE_FIELDS.map((f) => `${F.usageTotalPrefix}${f}`),
];

/** What a model step starts from, but its messages: the run, its transcript's length and size, the step stored at its depth if any. */
export interface StepHead {
  run: RunState;
  /** The run's spec with its stored size (as read, or as the reader held it). */
  spec: HeldSpec;
  /** How many messages the transcript has. */
  length: number;
  /** The transcript's size as stored (bytes of JSON). */
  size: number;
  /** The step already committed at this depth: this job is a redelivery. */
  step: StepRecord | null;
  /** Whether the previous round's tool messages are in the transcript. */
  roundAppended: boolean;
  /**
   * Whether this step's own round's tool messages are in the transcript: the step and its round
   * are done, and this job is one that came again (added twice, or redelivered late).
   */
  done: boolean;
}

/** What a model step starts from: its head and the transcript's messages. */
export interface StepInput extends StepHead {
  messages: ChatMessage[];
  /** The size of `messages` as stored (bytes of JSON, see TranscriptPrefix). */
  size: number;
}

/** The `tool` message a call's result becomes in the transcript. */
export function toolMessage(toolCallId: string, content: string): ChatMessage {
  return { role: 'tool', tool_call_id: toolCallId, content };
}

/**
 * A run's transcript: the messages in order, each step's record, and the writes that grow it
 * (a step's assistant message, a round's tool messages), each once per depth.
 */
export class Transcript {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  private keys(runId: string) {
    return runKeys(this.prefix, runId);
  }

  private ancestorKeys(run: RunState): string[] {
    return run.spec.ancestors.map((a) => this.keys(a).run);
  }

  async messages(runId: string): Promise<ChatMessage[]> {
    return (await this.storedMessages(runId)).map((m) => JSON.parse(m));
  }

  /** The transcript as stored: each message its JSON text. */
  async storedMessages(runId: string): Promise<string[]> {
    return this.redis.lrange(this.keys(runId).messages, 0, -1);
  }

  /** The transcript's stored size (bytes of its messages' JSON); null if there is no such run. */
  async storedSize(runId: string): Promise<number | null> {
    const bytes = await this.redis.hget(this.keys(runId).run, F.transcriptBytes);
    return bytes === null ? null : Number(bytes);
  }

  /**
   * Everything a model step needs in one round trip: the run, its transcript, the step already
   * committed at this depth (a redelivery), and whether the previous round's tool messages are
   * in the transcript (the round's last tool result appends them; see loadRound if not). Given
   * the `known` start of the transcript, it reads only the messages after it; should that start
   * not be the transcript's any more, it reads the whole transcript again (a second round trip).
   */
  async loadStep(runId: string, depth: number, known?: TranscriptPrefix): Promise<StepInput | null> {
    const read = await this.loadStepWithin(runId, depth, Infinity, known);
    if (read && 'tooLarge' in read) throw new Error('a read of any size found the transcript too large');
    return read;
  }

  /**
   * loadStep for a reader that holds room for `maxBytes` of transcript: given the `known` start
   * (or any size allowed), in one round trip as loadStep, the messages after it left unparsed
   * when the whole is larger; without one, the run and the transcript's size first, and its
   * messages in a second round trip only if it is at most that large. A transcript that is
   * larger comes back as its head (everything but the messages), its stored size in it: a
   * reader with room for that much then reads with loadStep. A reader that expects the transcript to fit
   * (`expectFits`: it was told its size, and took room for it) reads it whole in one round trip,
   * as with a known start: should it be larger after all, it comes back as its head, unparsed.
   */
  async loadStepWithin(
    runId: string,
    depth: number,
    maxBytes: number,
    known?: TranscriptPrefix,
    expectFits = false,
  ): Promise<StepInput | { tooLarge: true; head: StepHead } | null> {
    const k = this.keys(runId);
    if (!known && !expectFits && maxBytes !== Infinity) {
      const head = await this.loadHead(runId, depth);
      if (!head) return null;
      if (head.size > maxBytes) return { tooLarge: true, head };
      const raw = head.length > 0 ? await this.redis.lrange(k.messages, 0, head.length - 1) : [];
      // A transcript only grows at its end: fewer messages than counted means it was deleted.
      return raw.length === head.length ? this.inputFrom(head, raw) : null;
    }
    const from = known?.messages.length ?? 0;
    const [replies, tail] = await Promise.all([
      this.headReads(runId, depth, known?.spec),
      this.redis.lrange(k.messages, from, -1),
    ]);
    const head = this.headFrom(runId, depth, replies, known?.spec);
    if (!head) return null;
    // A held start that is not this transcript's (the run was created again under its id, or
    // the lengths do not add up): read it whole.
    if (known && (known.createdAt !== head.run.createdAt || head.length !== from + tail.length))
      return this.loadStepWithin(runId, depth, maxBytes);
    if (head.size > maxBytes) return { tooLarge: true, head };
    return this.inputFrom(head, tail, known);
  }

  /** A step's input but the messages, in one round trip; null if the run is gone. */
  private async loadHead(runId: string, depth: number): Promise<StepHead | null> {
    return this.headFrom(runId, depth, await this.headReads(runId, depth));
  }

  /**
   * The reads a head is made of (headFrom), sent back to back: one round trip, with any read
   * sent in the same tick, on a connection that writes in bursts (no pipeline object: building
   * one copies every script defined on the connection). The run's fields are read by name:
   * STEP_RUN_FIELDS, the markers of the previous round, of this one and of this step, and the
   * spec unless `held`.
   */
  private async headReads(
    runId: string,
    depth: number,
    held?: HeldSpec,
  ): Promise<[Array<string | null>, string | null, number]> {
    const k = this.keys(runId);
    const fields = [
      ...STEP_RUN_FIELDS,
      `${F.roundMarkerPrefix}${depth - 1}`,
      `${F.roundMarkerPrefix}${depth}`,
      `${F.stepMarkerPrefix}${depth}`,
      ...(held ? [] : [F.spec]),
    ];
    const [values, length] = await Promise.all([this.redis.hmget(k.run, ...fields), this.redis.llen(k.messages)]);
    // The step stored at this depth, read only when its marker (written with it) says there is
    // one: a job that came again, which then takes a second round trip, and no other step a read.
    const committed = values[STEP_RUN_FIELDS.length + 2] !== null;
    return [values, committed ? await this.redis.hget(k.steps, String(depth)) : null, length];
  }

  /**
   * A head from the replies to headReads, null if the run is gone. With a `held` spec, the run's
   * creation time must be checked against the holder's before the head is used: a run created
   * again under its id has another spec.
   */
  private headFrom(
    runId: string,
    depth: number,
    [values, cur, length]: [Array<string | null>, string | null, number],
    held?: HeldSpec,
  ): StepHead | null {
    const h: RunHash = {};
    STEP_RUN_FIELDS.forEach((f, i) => {
      const v = values[i];
      if (v !== null && v !== undefined) h[f] = v;
    });
    const n = STEP_RUN_FIELDS.length;
    const [previousRound, thisRound, specJson] = [values[n], values[n + 1], values[n + 3]];
    // Every stored run has a status and a spec; a gone run reads as nothing.
    if (h[F.status] === undefined || (!held && !specJson)) return null;
    const spec = held ?? heldSpecFrom(specJson!);
    const bytes = h[F.transcriptBytes];
    return {
      run: runStateFrom(runId, h, spec.value),
      spec,
      length,
      size: Number(bytes ?? 0),
      step: cur ? (JSON.parse(cur) as StepRecord) : null,
      roundAppended: depth > 0 && previousRound === '1',
      done: thisRound === '1',
    };
  }

  private inputFrom(head: StepHead, raw: string[], known?: TranscriptPrefix): StepInput {
    return {
      ...head,
      messages: [...(known?.messages ?? []), ...raw.map((m) => JSON.parse(m) as ChatMessage)],
      // What was read, not the stored count: the two disagree when an append lands between the
      // step's reads.
      size: (known?.size ?? 0) + raw.reduce((n, m) => n + Buffer.byteLength(m), 0),
    };
  }

  /**
   * Whether the round at `depth` is complete (its `tool` messages are in the transcript) and the
   * run goes on: then the step after it is due. One read of two fields.
   */
  async roundComplete(runId: string, depth: number): Promise<boolean> {
    const [status, appended] = await this.redis.hmget(this.keys(runId).run, F.status, `${F.roundMarkerPrefix}${depth}`);
    return status !== null && !isTerminal(status as RunStatus) && appended === '1';
  }

  /**
   * Appends a step's assistant message, counts its usage and appends `step.completed` (with
   * `event`), once per depth, in one round trip. Returns the step that is stored: this one, or
   * the one a previous attempt stored (which then wins, since the model may answer differently
   * twice). `null` if the run has ended meanwhile.
   */
  async commitStep(run: RunState, step: StepRecord, event: RunEventData<'step.completed'>): Promise<StepRecord | null> {
    const k = this.keys(run.id);
    const ancestors = this.ancestorKeys(run);
    const r = await commitStep(
      this.redis,
      { runKey: k.run, messagesKey: k.messages, stepsKey: k.steps, eventsKey: k.events, ancestorRunKeys: ancestors },
      {
        depth: step.depth,
        message: JSON.stringify(step.message),
        step: JSON.stringify(step),
        promptTokens: step.usage.prompt_tokens,
        completionTokens: step.usage.completion_tokens,
        totalTokens: step.usage.total_tokens,
        completedEvent: eventJson('step.completed', run.id, event),
        costNanos: step.usage.cost_usd === undefined ? '' : Math.round(step.usage.cost_usd * 1e9),
      },
    );
    if (r === 'terminal' || r === 'missing') return null;
    if (!r) return step;
    return JSON.parse(r) as StepRecord;
  }
}
