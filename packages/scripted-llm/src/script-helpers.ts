import { textOf } from './message-text.js';
import type { ChatMessage, ChatRequest } from './types.js';

/** The last message of a request. */
export function lastMessage(req: ChatRequest): ChatMessage | undefined {
  return req.messages[req.messages.length - 1];
}

/** The tool results sent after the last assistant message. */
export function toolResults(req: ChatRequest): Array<{ tool_call_id: string; content: string }> {
  const lastAssistant = req.messages.findLastIndex((m) => m?.role === 'assistant');
  return req.messages
    .slice(lastAssistant + 1)
    .filter((m) => m?.role === 'tool')
    .map((m) => ({ tool_call_id: String(m.tool_call_id), content: textOf(m.content) }));
}

/** The text of the first user message ('' when there is none). */
export function userText(req: ChatRequest): string {
  return textOf(req.messages.find((m) => m?.role === 'user')?.content);
}
