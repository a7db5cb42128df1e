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
 * The two calls every agent loop here makes, connected once: `callModel(model, messages)` (the
 * openai SDK, streamed like the agent-worker's call, assembled into an assistant message) and
 * `callTool(toolCall)` (the MCP SDK client; resolves with the text, or an error text).
 * `mcp` is `{ command, args }` (stdio) or `{ url }` (Streamable HTTP), as in mcp.json.
 */
export async function connectAgentParts({ baseURL, mcp, server = 'noop', clientName = 'agentq-bench-inprocess' }) {
  // Thousands of calls in flight on one stdio pipe add a 'drain' listener each; that is fine here.
  EventEmitter.defaultMaxListeners = 0;
  const openai = new OpenAI({ baseURL, apiKey: 'bench', maxRetries: 0 });
  const client = new Client({ name: clientName, version: '0.1.0' }, { capabilities: {} });
  const transport = mcp.url
    ? new StreamableHTTPClientTransport(new URL(mcp.url))
    : new StdioClientTransport({ command: mcp.command, args: mcp.args, stderr: 'ignore' });
  await client.connect(transport);
  const { tools: mcpTools } = await client.listTools();
  const tools = mcpTools.map((t) => ({
    type: 'function',
    function: { name: `${server}__${t.name}`, description: t.description ?? '', parameters: t.inputSchema },
  }));

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
    const calls = [];
    for await (const chunk of stream) {
      const d = chunk.choices?.[0]?.delta;
      if (!d) continue;
      if (d.content) content += d.content;
      for (const tc of d.tool_calls ?? []) {
        const slot = (calls[tc.index] ??= { id: '', type: 'function', function: { name: '', arguments: '' } });
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

  async function callTool(tc) {
    try {
      const args = tc.function.arguments ? JSON.parse(tc.function.arguments) : {};
      const r = await client.callTool({ name: tc.function.name.slice(server.length + 2), arguments: args });
      return r.content.map((c) => c.text ?? '').join('');
    } catch (err) {
      return `Error executing ${tc.function.name}: ${err.message}`;
    }
  }

  return {
    callModel,
    callTool,
    /** The stdio MCP server's pid (none for Streamable HTTP). */
    mcpPid: transport.pid ?? null,
    callFirstTool: () => client.callTool({ name: mcpTools[0].name, arguments: { i: 0 } }),
    close: () => client.close().catch(() => {}),
  };
}

/**
 * Connects the model and the MCP server once; returns `run(input, model)` that runs one whole
 * agent loop and resolves with the final message, and `close()`.
 */
export async function startInProcessLoop({ baseURL, mcp, server = 'noop', maxDepth = 10 }) {
  const { callModel, callTool, mcpPid, callFirstTool, close } = await connectAgentParts({ baseURL, mcp, server });

  // The seeds' get_completion(): one model call, then tools, then itself again.
  async function getCompletion(model, messages, depth = 0) {
    const message = await callModel(model, messages);
    messages.push(message);
    if (!message.tool_calls || depth >= maxDepth) return message;
    const results = await Promise.all(message.tool_calls.map(callTool));
    message.tool_calls.forEach((tc, i) => messages.push({ role: 'tool', tool_call_id: tc.id, content: results[i] }));
    return getCompletion(model, messages, depth + 1);
  }

  return {
    /** The stdio MCP server's pid (none for Streamable HTTP). */
    mcpPid,
    run: (input, model) => getCompletion(model, [{ role: 'user', content: input }]),
    /** One model call and one tool call on their own, for the unit costs. */
    callModel: (model) => callModel(model, [{ role: 'user', content: 'benchmark' }]),
    callTool: callFirstTool,
    close,
  };
}
