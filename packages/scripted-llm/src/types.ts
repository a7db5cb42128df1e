/** A part of a message's content given as an array (text parts carry `text`). */
export interface ChatContentPart {
  type: string;
  text?: string;
  [k: string]: unknown;
}

/** A tool call of an assistant message, in the OpenAI chat format. */
export interface ChatToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

/** One message of a request, in the OpenAI chat format (the server checks only that `messages` is an array). */
export interface ChatMessage {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
  content?: string | ChatContentPart[] | null;
  tool_calls?: ChatToolCall[];
  tool_call_id?: string;
  name?: string;
  [k: string]: unknown;
}

/** A tool offered in a request. */
export interface ChatTool {
  type: 'function';
  function: { name: string; description?: string; parameters?: unknown; [k: string]: unknown };
}

/** The body of a chat-completions request as the server received it. */
export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  tools?: ChatTool[];
  tool_choice?: unknown;
  stream?: boolean;
  stream_options?: { include_usage?: boolean };
  response_format?: unknown;
  [k: string]: unknown;
}

/** Token counts in the OpenAI `usage` shape. */
export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** A plain assistant text answer. */
export interface TextReply {
  content: string;
  tool_calls?: undefined;
  usage?: Partial<Usage>;
  delayMs?: number;
  chunkDelayMs?: number;
}

/** An assistant answer that calls one or more tools (in parallel). */
export interface ToolCallReply {
  tool_calls: Array<{ id?: string; name: string; arguments: string | object }>;
  content?: string | null;
  usage?: Partial<Usage>;
  delayMs?: number;
  chunkDelayMs?: number;
}

/** An HTTP error answer with an OpenAI-style error body. */
export interface ErrorReply {
  error: { status: number; message?: string; type?: string; code?: string; headers?: Record<string, string> };
  delayMs?: number;
}

/** Destroy the socket, before any byte or after `afterChunks` streamed chunks, to simulate a dropped connection. */
export interface DropReply {
  drop: true;
  afterChunks?: number;
}

/**
 * Stream these chunks exactly as given, one `data:` event each, then `[DONE]`: what a provider
 * may send, the malformed included (tests of a client's parsing). Needs `stream: true`.
 */
export interface RawStreamReply {
  rawChunks: unknown[];
  delayMs?: number;
}

/** Never answer, until the client aborts or the server closes. */
export interface HangReply {
  hang: true;
}

/** What a handler tells the server to do with one request. */
export type Reply = TextReply | ToolCallReply | ErrorReply | DropReply | HangReply | RawStreamReply;

/**
 * Decides the reply to each request; `callIndex` counts requests from 0 and `signal` aborts when the client
 * goes away.
 */
export type Handler = (req: ChatRequest, ctx: { callIndex: number; signal: AbortSignal }) => Reply | Promise<Reply>;

/** A running scripted server. */
export interface ScriptedLlm {
  /** e.g. `http://127.0.0.1:PORT/v1`, ready for `new OpenAI({ baseURL })`. */
  baseURL: string;
  port: number;
  /** Every chat request body received, in order (index = `callIndex`). */
  requests: ChatRequest[];
  /** The HTTP headers of each request, at the same index as `requests` (names lower-cased). */
  requestHeaders: Array<Record<string, string | string[] | undefined>>;
  setHandler(h: Handler): void;
  setLatency(ms: number): void;
  close(): Promise<void>;
}
