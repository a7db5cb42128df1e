export {
  AgentqClient,
  type AgentqClientOptions,
  type RequestOptions,
  type StreamEventsOptions,
  type WaitForReadyOptions,
  type WaitForRunOptions,
} from './client.js';
export {
  ActionResolvedError,
  AgentqApiError,
  AgentqTimeoutError,
  WebhookVerificationError,
  type ResolvedAction,
} from './errors.js';
export { progressPrinter, styleFor, summary, type ProgressOptions, type Style } from './progress.js';
export { parseSse, type SseMessage } from './sse.js';
export { verifyWebhook, type VerifyWebhookOptions } from './webhook.js';
export * from './types.js';
export * from './agent-types.js';
export { AgentsApi } from './agents.js';
