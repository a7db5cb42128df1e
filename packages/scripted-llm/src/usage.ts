import { textOf } from './message-text.js';
import type { ChatMessage, Usage } from './types.js';

/** A tool call as it leaves the server: id assigned, arguments already a string. */
export interface OutgoingToolCall {
  id: string;
  name: string;
  arguments: string;
}

// Roughly four characters a token: crude, but deterministic, which is what tests and benchmarks need.
const tokens = (chars: number) => Math.ceil(chars / 4);

function messageChars(message: ChatMessage): number {
  const calls = Array.isArray(message?.tool_calls) ? message.tool_calls : [];
  return calls.reduce(
    (n, c) => n + String(c?.function?.name ?? '').length + String(c?.function?.arguments ?? '').length,
    textOf(message?.content).length,
  );
}

/** Usage for one answer: the reply's own figures where given, otherwise estimated from characters. */
export function estimateUsage(
  messages: ChatMessage[],
  content: string | null,
  toolCalls: OutgoingToolCall[],
  given: Partial<Usage> = {},
): Usage {
  const outChars = toolCalls.reduce((n, c) => n + c.name.length + c.arguments.length, content?.length ?? 0);
  const prompt = given.prompt_tokens ?? tokens(messages.reduce((n: number, m) => n + messageChars(m), 0));
  const completion = given.completion_tokens ?? tokens(outChars);
  return {
    prompt_tokens: prompt,
    completion_tokens: completion,
    total_tokens: given.total_tokens ?? prompt + completion,
  };
}
