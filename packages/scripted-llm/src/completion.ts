import type { Answer } from './answer.js';

/** The non-streamed `chat.completion` object for an answer. */
export function completionBody(a: Answer): object {
  const message: Record<string, unknown> = { role: 'assistant', content: a.content, refusal: null };
  if (a.toolCalls.length > 0) {
    message.tool_calls = a.toolCalls.map((c) => ({
      id: c.id,
      type: 'function',
      function: { name: c.name, arguments: c.arguments },
    }));
  }
  return {
    id: a.id,
    object: 'chat.completion',
    created: a.created,
    model: a.model,
    choices: [{ index: 0, message, logprobs: null, finish_reason: a.finishReason }],
    usage: a.usage,
  };
}
