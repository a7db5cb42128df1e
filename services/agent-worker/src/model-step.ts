import OpenAI from 'openai';
import type { AssistantMessage, ChatMessage, ModelSettings, ResponseFormat, ToolCall } from '@agentq/shared/core';
import { AgentqError, FatalError, modelSettingsParams, RetryableError } from '@agentq/shared/core';
import { answerTooLarge, type AnswerHold } from './model-answers-in-flight.js';
import { tooLarge } from './model-http.js';
import { startModelCall } from './model-telemetry.js';
import { SseReader, type SseEvent } from './sse-reader.js';
import { StreamBounds } from './stream-bounds.js';
import { StreamedMessage } from './streamed-message.js';

/** One model request: the transcript, and how tools are offered. */
export interface ModelRequest {
  model: string;
  messages: ChatMessage[];
  tools: Array<{
    type: 'function';
    function: { name: string; description: string; parameters: Record<string, unknown> };
  }>;
  toolChoice: 'auto' | 'none' | 'absent';
  responseFormat?: ResponseFormat;
  /** The run's model_settings, sent with the call. */
  settings?: ModelSettings;
  signal?: AbortSignal;
  /** The whole call, from request to last chunk. */
  timeoutMs: number;
  /** The longest silence between two chunks once the stream has begun. */
  idleTimeoutMs: number;
  /** The most bytes of the event stream read (MODEL_RESPONSE_MAX_MB); past it the call fails with model_response_too_large. */
  maxResponseBytes?: number;
  /**
   * What the step's answers hold in the worker (MODEL_ANSWERS_IN_FLIGHT_MB): reading waits while
   * the worker holds too much, and an answer larger than the whole bound is refused
   * (model_response_too_large). Unset: no bound but maxResponseBytes.
   */
  answer?: AnswerHold;
  /** Called with each piece of text as it streams in. */
  onDelta?: (text: string) => void;
}

type Chunk = OpenAI.Chat.Completions.ChatCompletionChunk;

export interface ModelResponse {
  message: AssistantMessage;
  usage: { prompt_tokens: number; completion_tokens: number; total_tokens: number; cached_tokens?: number };
  finishReason: string | null;
}

/**
 * Makes one streamed chat-completions call and assembles the assistant message from its
 * deltas (text and tool calls, whose arguments arrive in pieces keyed by `index`; see
 * StreamedMessage for what a malformed stream is).
 * Provider faults become RetryableError (429, 5xx, timeouts, dropped connections) or
 * FatalError (a request no retry can fix).
 */
export async function callModel(client: OpenAI, req: ModelRequest): Promise<ModelResponse> {
  const params: Record<string, unknown> = {
    model: req.model,
    messages: req.messages,
    stream: true,
    stream_options: { include_usage: true },
  };
  const withTools = req.toolChoice !== 'absent' && req.tools.length > 0;
  if (withTools) {
    params.tools = req.tools;
    params.tool_choice = req.toolChoice;
  }
  if (req.settings) Object.assign(params, modelSettingsParams(req.settings, withTools));
  if (req.responseFormat) params.response_format = req.responseFormat;

  const assembled = new StreamedMessage();
  const bounds = new StreamBounds({ totalMs: req.timeoutMs, idleMs: req.idleTimeoutMs, signal: req.signal });
  const call = startModelCall(client, req.model, bounds.signal);
  try {
    // The SDK makes the request (its errors, retries and timeout until the answer starts); the
    // stream's events are read here, in one pass a chunk (the SDK's reader took a tenth of the
    // worker's CPU).
    const response = await client.chat.completions
      .create(params as unknown as OpenAI.ChatCompletionCreateParamsStreaming, {
        signal: bounds.signal,
        timeout: req.timeoutMs,
      })
      .asResponse();
    bounds.touch();
    const sse = new SseReader();
    const maxBytes = req.maxResponseBytes ?? Infinity;
    const hold = req.answer;
    let received = 0;
    /** Takes in one event; true at `[DONE]`. Only events count as a sign of life (not comments). */
    const take = (event: SseEvent): boolean => {
      if (event.data === '[DONE]') return true;
      bounds.touch();
      const chunk = chunkOf(event, response.headers);
      const text = assembled.add(chunk);
      call?.chunk(chunk as Chunk);
      if (text) req.onDelta?.(text);
      return false;
    };
    // Until the stream ends, or an event says the answer is whole.
    const read = async (): Promise<void> => {
      for await (const bytes of (response.body ?? []) as AsyncIterable<Uint8Array>) {
        // Whatever the client the SDK was given: a stream that never ends would otherwise grow
        // the answer until the step's deadline.
        received += bytes.byteLength;
        if (received > maxBytes) throw tooLarge(maxBytes);
        if (hold) {
          if (received > hold.capacity) throw answerTooLarge(hold.capacity);
          const room = hold.charge(bytes.byteLength, bounds.signal);
          if (room !== undefined) {
            // Not reading meanwhile: the body's buffer fills and its socket pauses.
            bounds.pauseIdle();
            await room;
            bounds.touch();
          }
        }
        for (const event of sse.push(bytes)) if (take(event)) return;
      }
      for (const event of sse.end()) if (take(event)) return;
    };
    await read();
    // A stream cut short is never an answer: an abort may end the iteration without an error.
    if (req.signal?.aborted) throw req.signal.reason;
    if (bounds.expired) throw bounds.expired;
    if (!assembled.finishReason)
      throw new RetryableError('the model stream ended before its finish_reason', 'model_stream_interrupted');
  } catch (err) {
    call?.fail(err);
    if (req.signal?.aborted) throw req.signal.reason ?? err;
    if (bounds.expired) throw bounds.expired;
    throw classifyProviderError(err);
  } finally {
    call?.end();
    bounds.dispose();
  }

  // Every tool call the model made is returned: whether they are run is the step decision's.
  const message = assembled.message();
  return {
    message,
    usage: assembled.usage ?? estimateUsage(req.messages, assembled.content, message.tool_calls ?? []),
    finishReason: assembled.finishReason,
  };
}

/**
 * A streamed event's chunk, or the error it carries. Data that is not JSON is a malformed
 * stream, retried as the others are. An `error` event or an `error` in the data comes after the
 * provider's `200`: with an HTTP status in its `code` or `status` (as proxies send a request's
 * errors that way), or as a refused request (`invalid_request_error`, `context_length_exceeded`),
 * it is classified as that answer would be; otherwise it is a fault of the provider's, retried
 * like a 5xx (the SDK's reader made every one an error without a status, which failed the run).
 */
function chunkOf(event: SseEvent, headers: Headers): unknown {
  let data: { error?: unknown } | null;
  try {
    data = JSON.parse(event.data) as { error?: unknown } | null;
  } catch {
    throw new RetryableError(
      `the model stream sent data that is not JSON: ${JSON.stringify(event.data.slice(0, 200))}`,
      'model_stream_malformed',
    );
  }
  if (event.event !== 'error' && !data?.error) return data;
  const body = (data?.error ?? data) as { code?: unknown; status?: unknown; type?: unknown } | null;
  const status = httpStatusIn(body?.code) ?? httpStatusIn(body?.status);
  const cause = new OpenAI.APIError(status, body ?? undefined, undefined, headers);
  if (status !== undefined || cause.code === 'context_length_exceeded' || cause.type === 'invalid_request_error')
    throw classifyProviderError(cause);
  throw new RetryableError(`the model stream carried an error: ${headOf(cause.message)}`, 'model_unavailable', {
    cause,
  });
}

/** An HTTP error status given as a number or a string of digits, or undefined. */
function httpStatusIn(v: unknown): number | undefined {
  const n = typeof v === 'number' ? v : typeof v === 'string' && /^\d{3}$/.test(v) ? Number(v) : NaN;
  return Number.isInteger(n) && n >= 400 && n <= 599 ? n : undefined;
}

// Providers that do not report usage on streams still get counted, roughly (4 chars a token).
function estimateUsage(messages: ChatMessage[], content: string, calls: ToolCall[]) {
  const prompt = Math.ceil(JSON.stringify(messages).length / 4);
  const completion = Math.ceil((content.length + JSON.stringify(calls).length) / 4);
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

function retryAfterMs(headers: Headers | undefined): number | undefined {
  const ms = headers?.get?.('retry-after-ms');
  if (ms && Number.isFinite(Number(ms))) return Number(ms);
  const s = headers?.get?.('retry-after');
  if (!s) return undefined;
  if (Number.isFinite(Number(s))) return Number(s) * 1000;
  const at = Date.parse(s);
  return Number.isFinite(at) ? Math.max(0, at - Date.now()) : undefined;
}

// A provider's error message can be long (some echo the request back), and it ends up in the
// run's error and under the patterns below, which are quadratic in it (320 KB of "maximum "
// took 19 s): only its head is kept.
const MAX_DETAIL_CHARS = 2_000;
const headOf = (message: string) =>
  message.length > MAX_DETAIL_CHARS ? `${message.slice(0, MAX_DETAIL_CHARS)}… (${message.length} characters)` : message;

/**
 * Why a connection failed, from the error's causes (the SDK says only "Connection error."; fetch
 * wraps the socket's error in "fetch failed"): the innermost message and code, e.g.
 * ` (self-signed certificate; DEPTH_ZERO_SELF_SIGNED_CERT)`, or nothing.
 */
function rootCause(err: Error): string {
  let inner: unknown = err.cause;
  for (let i = 0; i < 5 && inner instanceof Error && inner.cause instanceof Error; i++) inner = inner.cause;
  if (!(inner instanceof Error)) return '';
  const code = (inner as NodeJS.ErrnoException).code;
  return ` (${headOf(inner.message)}${typeof code === 'string' && code !== inner.message ? `; ${code}` : ''})`;
}

/** Maps an `openai` SDK error to a retryable or fatal agentq error. */
export function classifyProviderError(err: unknown): Error {
  // Already classified (a malformed or unfinished stream), whatever its message says.
  if (err instanceof AgentqError) return err;
  if (err instanceof OpenAI.APIUserAbortError) return err;
  if (err instanceof OpenAI.APIConnectionTimeoutError)
    return new RetryableError(`model request timed out`, 'model_timeout', { cause: err });
  if (err instanceof OpenAI.APIConnectionError)
    return new RetryableError(`model endpoint unreachable: ${err.message}${rootCause(err)}`, 'model_unreachable', {
      cause: err,
    });
  if (err instanceof OpenAI.APIError) {
    const status = err.status;
    const detail = headOf(err.message);
    if (status === 429)
      return new RetryableError(`model rate limited (429): ${detail}`, 'model_rate_limited', {
        cause: err,
        retryAfterMs: retryAfterMs(err.headers),
      });
    if (status === 408 || status === 409 || (status !== undefined && status >= 500))
      return new RetryableError(`model endpoint error (${status}): ${detail}`, 'model_unavailable', {
        cause: err,
        retryAfterMs: retryAfterMs(err.headers),
      });
    if (status === 401 || status === 403)
      return new FatalError(`the model endpoint refused the credentials (${status}): ${detail}`, 'model_auth_failed', {
        cause: err,
      });
    if (status === 404)
      return new FatalError(`the model endpoint does not know this model or path (404): ${detail}`, 'model_not_found', {
        cause: err,
      });
    const code =
      err.code === 'context_length_exceeded' || /context|maximum.*tokens|too long|exceed.*limit/i.test(detail)
        ? 'context_length_exceeded'
        : 'model_bad_request';
    return new FatalError(`the model endpoint rejected the request (${status}): ${detail}`, code, { cause: err });
  }
  if (err instanceof Error && /terminated|socket|ECONNRESET|premature|aborted/i.test(headOf(err.message)))
    return new RetryableError(`model stream broke off: ${headOf(err.message)}`, 'model_stream_interrupted', {
      cause: err,
    });
  return err instanceof Error ? err : new Error(String(err));
}
