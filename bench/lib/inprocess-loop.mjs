// @ts-check
// Baseline (a): the agent loop of the seeds, in one process, no queue, no store. Call the model
// (openai SDK, streamed like the agent-worker does) over HTTP; if it asked for tools, call them
// in parallel on the MCP server (MCP SDK client), append the results and recurse; stop on an
// answer without tools. Nothing survives a crash, which is the point of the comparison.
import { EventEmitter } from 'node:events';
import OpenAI from 'openai';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';

/**
 * @typedef {import('openai').OpenAI.ChatCompletionMessageParam} Message
 * @typedef {import('openai').OpenAI.ChatCompletionMessageFunctionToolCall} ToolCall
 * @typedef {{ role: 'assistant', content: string | null, tool_calls?: ToolCall[] }} Answer
 */

/**
 * The two calls every agent loop here makes, connected once: `callModel(model, messages)` (the
 * openai SDK, streamed like the agent-worker's call, assembled into an assistant message) and
 * `callTool(toolCall)` (the MCP SDK client; resolves with the text, or an error text).
 * `mcp` is `{ command, args }` (stdio) or `{ url }` (Streamable HTTP), as in mcp.json.
 * @param {{ baseURL: string, mcp: import('./types.d.ts').McpConfig, server?: string, clientName?: string }} options
 */
export async function connectAgentParts({ baseURL, mcp, server = 'noop', clientName = 'agentq-bench-inprocess' }) {
  // Thousands of calls in flight on one stdio pipe add a 'drain' listener each; that is fine here.
  EventEmitter.defaultMaxListeners = 0;
  const openai = new OpenAI({ baseURL, apiKey: 'bench', maxRetries: 0 });
  const client = new Client({ name: clientName, version: '0.1.0' }, { capabilities: {} });
  const stdio = mcp.url
    ? null
    : new StdioClientTransport({ command: String(mcp.command), args: mcp.args, stderr: 'ignore' });
  await client.connect(stdio ?? new StreamableHTTPClientTransport(new URL(String(mcp.url))));
  const { tools: mcpTools } = await client.listTools();
  /** @type {import('openai').OpenAI.ChatCompletionTool[]} */
  const tools = mcpTools.map((t) => ({
    type: 'function',
    function: { name: `${server}__${t.name}`, description: t.description ?? '', parameters: t.inputSchema },
  }));

  /**
   * @param {string} model
   * @param {Message[]} messages
   * @returns {Promise<Answer>}
   */
  async function callModel(model, messages) {
    const stream = await openai.chat.completions.create({
      model,
      messages,
      tools,
      tool_choice: 'auto',
      stream: true,
      stream_options: { include_usage: true },
    });
    let content = '';
    /** @type {ToolCall[]} */
    const calls = [];
    for await (const chunk of stream) {
      const d = chunk.choices?.[0]?.delta;
      if (!d) continue;
      if (d.content) content += d.content;
      for (const tc of d.tool_calls ?? []) {
        calls[tc.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } };
        const slot = calls[tc.index];
        if (tc.id) slot.id = tc.id;
        if (tc.function?.name) slot.function.name += tc.function.name;
        if (tc.function?.arguments) slot.function.arguments += tc.function.arguments;
      }
    }
    return {
      role: 'assistant',
      content: calls.length ? null : content,
      ...(calls.length ? { tool_calls: calls } : {}),
    };
  }

  /** @param {ToolCall} tc */
  async function callTool(tc) {
    try {
      const args = tc.function.arguments ? JSON.parse(tc.function.arguments) : {};
      const r = await client.callTool({ name: tc.function.name.slice(server.length + 2), arguments: args });
      const content = /** @type {Array<{ text?: string }>} */ (r.content);
      return content.map((c) => c.text ?? '').join('');
    } catch (err) {
      return `Error executing ${tc.function.name}: ${err instanceof Error ? err.message : String(err)}`;
    }
  }

  return {
    callModel,
    callTool,
    /** The stdio MCP server's pid (none for Streamable HTTP). */
    mcpPid: stdio?.pid ?? null,
    callFirstTool: () => client.callTool({ name: mcpTools[0].name, arguments: { i: 0 } }),
    close: () => client.close().catch(() => {}),
  };
}

/**
 * Connects the model and the MCP server once; returns `run(input, model)` that runs one whole
 * agent loop and resolves with the final message, and `close()`.
 * @param {{ baseURL: string, mcp: import('./types.d.ts').McpConfig, server?: string, maxDepth?: number }} options
 */
export async function startInProcessLoop({ baseURL, mcp, server = 'noop', maxDepth = 10 }) {
  const { callModel, callTool, mcpPid, callFirstTool, close } = await connectAgentParts({ baseURL, mcp, server });

  // The seeds' get_completion(): one model call, then tools, then itself again.
  /**
   * @param {string} model
   * @param {Message[]} messages
   * @returns {Promise<Answer>}
   */
  async function getCompletion(model, messages, depth = 0) {
    const message = await callModel(model, messages);
    messages.push(message);
    if (!message.tool_calls || depth >= maxDepth) return message;
    const results = await Promise.all(message.tool_calls.map(callTool));
    for (const [i, tc] of message.tool_calls.entries())
      messages.push({ role: 'tool', tool_call_id: tc.id, content: results[i] });
    return getCompletion(model, messages, depth + 1);
  }

  return {
    /** The stdio MCP server's pid (none for Streamable HTTP). */
    mcpPid,
    run: (/** @type {string} */ input, /** @type {string} */ model) =>
      getCompletion(model, [{ role: 'user', content: input }]),
    /** One model call and one tool call on their own, for the unit costs. */
    callModel: (/** @type {string} */ model) => callModel(model, [{ role: 'user', content: 'benchmark' }]),
    callTool: callFirstTool,
    close,
  };
}
