import type OpenAI from 'openai';
import { boundedLabel, failSpan, GEN_AI, startChatSpan, type AgentqMetrics, type Span } from '@agentq/shared';

type Chunk = OpenAI.Chat.Completions.ChatCompletionChunk;
type Usage = { prompt_tokens?: number; completion_tokens?: number } | null | undefined;

/** One model call being observed: its span, its clock and what the response said. */
class ModelCall {
  private readonly started = performance.now();
  private finishReasons: string[] = [];
  private usage: Usage;
  private responseModel?: string;
  private responseId?: string;
  private ended = false;

  constructor(
    private readonly span: Span,
    private readonly model: string,
    private readonly metrics?: AgentqMetrics,
    private readonly signal?: AbortSignal,
  ) {}

  chunk(c: Chunk): void {
    if (c.usage) this.usage = c.usage;
    if (c.model) this.responseModel = c.model;
    if (c.id) this.responseId = c.id;
    for (const choice of c.choices ?? []) if (choice.finish_reason) this.finishReasons[choice.index ?? 0] = choice.finish_reason;
  }

  completion(c: OpenAI.Chat.Completions.ChatCompletion): void {
    this.usage = c.usage;
    this.responseModel = c.model;
    this.responseId = c.id;
    this.finishReasons = (c.choices ?? []).map((ch) => ch.finish_reason ?? 'unknown');
  }

  fail(err: unknown): void {
    if (this.ended) return;
    failSpan(this.span, err);
    // Cancelled runs, deadlines and worker shutdowns abort calls: not the provider's fault.
    this.end(this.signal?.aborted ? 'aborted' : 'error');
  }

  end(outcome: 'ok' | 'error' | 'aborted' = 'ok'): void {
    if (this.ended) return;
    this.ended = true;
    const input = this.usage?.prompt_tokens;
    const output = this.usage?.completion_tokens;
    const attrs: Record<string, string | number | string[]> = {};
    if (input !== undefined) attrs[GEN_AI.usageInputTokens] = input;
    if (output !== undefined) attrs[GEN_AI.usageOutputTokens] = output;
    const reasons = this.finishReasons.filter(Boolean);
    if (reasons.length) attrs[GEN_AI.responseFinishReasons] = reasons;
    if (this.responseModel) attrs[GEN_AI.responseModel] = this.responseModel;
    if (this.responseId) attrs[GEN_AI.responseId] = this.responseId;
    this.span.setAttributes(attrs);
    this.span.end();
    if (!this.metrics) return;
    this.metrics.modelCallDuration.observe({ model: this.model, outcome }, (performance.now() - this.started) / 1000);
    if (input) this.metrics.modelTokens.inc({ model: this.model, type: 'input' }, input);
    if (output) this.metrics.modelTokens.inc({ model: this.model, type: 'output' }, output);
  }
}

async function* observeStream(stream: AsyncIterable<Chunk>, call: ModelCall): AsyncGenerator<Chunk> {
  try {
    for await (const chunk of stream) {
      call.chunk(chunk);
      yield chunk;
    }
  } catch (err) {
    call.fail(err);
    throw err;
  } finally {
    call.end();
  }
}

/**
 * Observes every chat-completions call made with `client`: a `chat <model>` client span (GenAI
 * semantic conventions: model, token usage, finish reasons), a child of the active step span,
 * and the model metrics (latency from request to last streamed chunk, tokens as the provider
 * reports them). It wraps the client's `chat.completions.create`, so the code that calls the
 * model needs no change; the response is passed through chunk by chunk, unchanged.
 */
export function observeModelCalls<C extends OpenAI>(client: C, metrics?: AgentqMetrics): C {
  const completions = client.chat.completions;
  const create = completions.create.bind(completions) as (params: unknown, options?: unknown) => Promise<unknown>;
  const modelLabel = boundedLabel();
  const server = safeHost(client.baseURL);
  const observed = (params: { model?: string; stream?: boolean | null }, options?: unknown) => {
    const model = String(params?.model ?? 'unknown');
    const span = startChatSpan(model, server ? { 'server.address': server } : {});
    const call = new ModelCall(span, modelLabel(model), metrics, (options as { signal?: AbortSignal } | undefined)?.signal);
    let pending: Promise<unknown>;
    try {
      pending = create(params, options);
    } catch (err) {
      call.fail(err);
      throw err;
    }
    return pending.then(
      (result) => {
        if (params?.stream) return observeStream(result as AsyncIterable<Chunk>, call);
        call.completion(result as OpenAI.Chat.Completions.ChatCompletion);
        call.end();
        return result;
      },
      (err: unknown) => {
        call.fail(err);
        throw err;
      },
    );
  };
  (completions as unknown as { create: unknown }).create = observed;
  return client;
}

function safeHost(url: string): string | undefined {
  try {
    return new URL(url).hostname;
  } catch {
    return undefined;
  }
}
