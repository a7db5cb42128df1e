import type { RedisClient } from '../redis.js';
import type { ToolCall } from '../schemas/message.js';
import { runKeys, TOOL_CALL_FIELDS as T } from './keys.js';
import type { ToolCallRunning, ToolResultRecord } from './tool-calls.js';
import type { StepRecord } from './transcript.js';

/** `GET /v1/runs/:id/steps`: each model step with its tool calls and their state. */
export class StepsView {
  constructor(
    private readonly redis: RedisClient,
    private readonly prefix: string,
  ) {}

  async list(runId: string) {
    const k = runKeys(this.prefix, runId);
    const stepsHash = await this.redis.hgetall(k.steps);
    const steps = Object.values(stepsHash)
      .map((s) => JSON.parse(s) as StepRecord)
      .sort((a, b) => a.depth - b.depth);
    const pipe = this.redis.pipeline();
    for (const s of steps) pipe.hgetall(k.toolCalls(s.depth));
    const toolCalls = (await pipe.exec()) ?? [];
    return steps.map((s, i) => {
      const h = (toolCalls[i]?.[1] ?? {}) as Record<string, string>;
      const calls = (s.message.tool_calls ?? []).map((tc: ToolCall, index: number) => {
        const done = h[T.result(index)] ? (JSON.parse(h[T.result(index)]) as ToolResultRecord) : null;
        const running = h[T.running(index)] ? (JSON.parse(h[T.running(index)]) as ToolCallRunning) : null;
        return {
          id: tc.id,
          name: tc.function.name,
          arguments: tc.function.arguments,
          status: done ? done.status : running ? 'running' : 'queued',
          output: done?.output ?? null,
          is_error: done?.is_error ?? false,
          ...(done?.outcome ? { outcome: done.outcome } : {}),
          attempts: done?.attempts ?? running?.attempts ?? 0,
          duration_ms: done?.duration_ms ?? null,
          ...(done?.subrun_ids ? { subrun_ids: done.subrun_ids } : {}),
        };
      });
      return {
        depth: s.depth,
        status: s.status,
        model: s.model,
        usage: s.usage,
        started_at: s.started_at,
        completed_at: s.completed_at,
        tool_calls: calls,
      };
    });
  }
}
