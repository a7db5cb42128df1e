import type { RedisClient } from '../infra/redis.js';
import type { ChatMessage } from '../core/schemas/message.js';
import { runKeys } from './keys.js';
import { redisScript } from './redis-script.js';

/** Appends a repair round (see append-repair-round.lua). */
const appendRepairRound = redisScript({
  file: 'append-repair-round',
  keys: (k: { runKey: string; messagesKey: string }) => [k.runKey, k.messagesKey],
  args: (a: { depth: number; message: string }) => [a.depth, a.message],
  reply: (r) => r === 1,
});

/**
 * Structured-output repair: after a final answer that failed the run's response_format, the
 * round that tells the model what failed, so that its next step answers again.
 */
export class RepairRounds {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  /** Appends `message` as the round after the step at `depth`, once; false if the run has ended. */
  async append(runId: string, depth: number, message: ChatMessage): Promise<boolean> {
    const k = runKeys(this.prefix, runId);
    const json = JSON.stringify(message);
    return appendRepairRound(this.redis, { runKey: k.run, messagesKey: k.messages }, { depth, message: json });
  }
}
