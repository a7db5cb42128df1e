import { estimateUsage, type OutgoingToolCall } from './usage.js';
import type { ChatRequest, TextReply, ToolCallReply, Usage } from './types.js';

/** A scripted reply normalised into what both the streamed and the plain response render. */
export interface Answer {
  id: string;
  model: string;
  created: number;
  content: string | null;
  toolCalls: OutgoingToolCall[];
  finishReason: 'stop' | 'tool_calls';
  usage: Usage;
}

/** Normalise a text or tool-call reply; `nextCallId` supplies ids the reply leaves out. */
export function toAnswer(
  req: ChatRequest,
  reply: TextReply | ToolCallReply,
  id: string,
  nextCallId: () => string,
): Answer {
  const toolCalls = (reply.tool_calls ?? []).map((c) => ({
    id: c.id ?? nextCallId(),
    name: c.name,
    arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments),
  }));
  const content = reply.content ?? null;
  return {
    id,
    model: req.model,
    created: Math.floor(Date.now() / 1000),
    content,
    toolCalls,
    finishReason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
    usage: estimateUsage(req.messages, content, toolCalls, reply.usage),
  };
}
