import type { Answer } from './answer.js';
import { splitArguments, splitWords } from './split.js';

type Meta = Pick<Answer, 'id' | 'model' | 'created'>;

/** One `chat.completion.chunk` with a single choice. */
export function chunk(meta: Meta, delta: object, finishReason: string | null = null): object {
  return {
    id: meta.id,
    object: 'chat.completion.chunk',
    created: meta.created,
    model: meta.model,
    choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason }],
  };
}

/** Every chunk of a streamed answer, in order, ending with the usage chunk when asked for. */
export function answerChunks(a: Answer, includeUsage: boolean): object[] {
  const out = [chunk(a, { role: 'assistant', content: a.content === null ? null : '' })];
  for (const piece of splitWords(a.content ?? '')) out.push(chunk(a, { content: piece }));
  a.toolCalls.forEach((c, index) => {
    // The first delta of a call names it; later ones only append to its arguments, as the real API does.
    out.push(
      chunk(a, { tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] }),
    );
    for (const piece of splitArguments(c.arguments)) {
      out.push(chunk(a, { tool_calls: [{ index, function: { arguments: piece } }] }));
    }
  });
  out.push(chunk(a, {}, a.finishReason));
  if (includeUsage) {
    out.push({
      id: a.id,
      object: 'chat.completion.chunk',
      created: a.created,
      model: a.model,
      choices: [],
      usage: a.usage,
    });
  }
  return out;
}

/** Endless filler chunks for a stream that is going to be dropped part-way. */
export function* fillerChunks(meta: Meta): Generator<object> {
  yield chunk(meta, { role: 'assistant', content: '' });
  for (;;) yield chunk(meta, { content: 'partial ' });
}
