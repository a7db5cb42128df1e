export type {
  ChatContentPart,
  ChatMessage,
  ChatRequest,
  ChatTool,
  ChatToolCall,
  DropReply,
  ErrorReply,
  Handler,
  HangReply,
  RawStreamReply,
  Reply,
  ScriptedLlm,
  TextReply,
  ToolCallReply,
  Usage,
} from './types.js';
export { startScriptedLlm } from './server.js';
export { lastMessage, toolResults, userText } from './script-helpers.js';
