import type { CallToolResult, ContentBlock } from '@modelcontextprotocol/sdk/types.js';
import type { ToolOutcome } from '@agentq/shared/core';

// Binary payloads are never inlined: a model cannot use base64, and it would eat the context.
function placeholder(kind: string, mimeType: string | undefined, base64: string): string {
  return `[${kind} ${mimeType ?? 'application/octet-stream'}, ${base64.length} bytes base64]`;
}

/** Renders one MCP content block as text; binary blocks become a short placeholder. */
export function renderContentBlock(block: ContentBlock): string {
  switch (block.type) {
    case 'text':
      return block.text;
    case 'image':
      return placeholder('image', block.mimeType, block.data);
    case 'audio':
      return placeholder('audio', block.mimeType, block.data);
    case 'resource_link':
      return `[resource_link ${block.name} ${block.uri}${block.mimeType ? ` ${block.mimeType}` : ''}]`;
    case 'resource': {
      const r = block.resource;
      // A text resource is content the model can read; only blobs are summarised.
      if ('text' in r && typeof r.text === 'string') return `[resource ${r.uri}]\n${r.text}`;
      const blob = 'blob' in r && typeof r.blob === 'string' ? r.blob : '';
      return `[resource ${r.uri} ${r.mimeType ?? 'application/octet-stream'}, ${blob.length} bytes base64]`;
    }
    default:
      return `[${(block as { type: string }).type} content]`;
  }
}

/**
 * Renders an MCP tool result as the text the model sees: content blocks joined by newlines,
 * or the JSON of `structuredContent` when the result carries no text. An error result is a
 * `tool_error` in the tool's own words.
 */
export function renderToolResult(result: CallToolResult): ToolOutcome {
  const blocks = result.content ?? [];
  const hasText = blocks.some((b) => b.type === 'text' || (b.type === 'resource' && 'text' in b.resource));
  let content = blocks.map(renderContentBlock).join('\n');
  if (!hasText && result.structuredContent !== undefined) {
    const json = JSON.stringify(result.structuredContent);
    content = content ? `${json}\n${content}` : json;
  }
  return { kind: result.isError === true ? 'tool_error' : 'ok', text: content };
}
