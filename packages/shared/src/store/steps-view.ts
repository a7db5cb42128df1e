import { actionId, type ActionDecision, type ActionRecord } from '../actions/action-record.js';
import type { RedisClient } from '../infra/redis.js';
import { decisionField } from './actions.js';
import type { ToolCall } from '../core/schemas/message.js';
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
    pipe.hgetall(k.actions);
    const rows = (await pipe.exec()) ?? [];
    const actions = (rows[steps.length]?.[1] ?? {}) as Record<string, string>;
    return steps.map((s, i) => {
      const h = (rows[i]?.[1] ?? {}) as Record<string, string>;
      const calls = (s.message.tool_calls ?? []).map((tc: ToolCall, index: number) => {
        const done = h[T.result(index)] ? (JSON.parse(h[T.result(index)]) as ToolResultRecord) : null;
        const running = h[T.running(index)] ? (JSON.parse(h[T.running(index)]) as ToolCallRunning) : null;
        const approval = approvalOf(actions, actionId(runId, s.depth, index));
        const waiting = approval?.decision === 'pending' && !done && !running;
        return {
          id: tc.id,
          name: tc.function.name,
          arguments: tc.function.arguments,
          status: done ? done.status : running ? 'running' : waiting ? 'requires_action' : 'queued',
          output: done?.output ?? null,
          is_error: done?.is_error ?? false,
          ...(done?.outcome ? { outcome: done.outcome } : {}),
          attempts: done?.attempts ?? running?.attempts ?? 0,
          duration_ms: done?.duration_ms ?? null,
          ...(done?.subrun_ids ? { subrun_ids: done.subrun_ids } : {}),
          ...(approval ? { approval } : {}),
        };
      });
      return {
        depth: s.depth,
        status: s.status,
        model: s.model,
        usage: s.usage,
        started_at: s.started_at,
        completed_at: s.completed_at,
        ...(s.error ? { error: s.error } : {}),
        ...(s.repair ? { repair: s.repair } : {}),
        tool_calls: calls,
      };
    });
  }
}

/** A call's request for an answer and its decision, as `/steps` shows it; undefined if it made none. */
function approvalOf(actions: Record<string, string>, id: string) {
  if (!actions[id]) return undefined;
  const record = JSON.parse(actions[id]) as ActionRecord;
  const d = actions[decisionField(id)] ? (JSON.parse(actions[decisionField(id)]) as ActionDecision) : null;
  return {
    id,
    type: record.type,
    decision: d?.decision ?? ('pending' as const),
    ...(d?.reason !== undefined ? { reason: d.reason } : {}),
    ...(d?.arguments !== undefined ? { arguments: d.arguments } : {}),
    ...(d ? { by: d.by, at: d.at } : {}),
  };
}
