#!/usr/bin/env node
// @ts-check
// A no-op MCP tool server for the benchmarks, on the official SDK (@modelcontextprotocol/sdk).
// One tool, `noop`, that answers "ok" at once, so a benchmark measures the runtime around a
// tool call and not the tool.
//
//   node bench/noop-mcp-server.mjs                 stdio (what `npm run bench` uses by default)
//   node bench/noop-mcp-server.mjs --http [port]   Streamable HTTP, stateless, JSON responses,
//                                                  at http://127.0.0.1:<port>/mcp; prints
//                                                  {"url": …} on stdout when listening
import { createServer } from 'node:http';
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { CallToolRequestSchema, ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const TOOLS = [
  {
    name: 'noop',
    description: 'Does nothing and answers "ok".',
    inputSchema: { type: 'object', properties: { i: { type: 'number' } } },
    annotations: { readOnlyHint: true },
  },
];

function buildServer() {
  const server = new Server({ name: 'agentq-bench-noop', version: '1.0.0' }, { capabilities: { tools: {} } });
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: TOOLS }));
  server.setRequestHandler(CallToolRequestSchema, async (req) => {
    if (req.params.name !== 'noop')
      return { content: [{ type: 'text', text: `unknown tool ${req.params.name}` }], isError: true };
    return { content: [{ type: 'text', text: 'ok' }] };
  });
  return server;
}

const http = process.argv.includes('--http');
if (!http) {
  await buildServer().connect(new StdioServerTransport());
  // The client closing stdin ends us.
  process.stdin.on('end', () => process.exit(0));
} else {
  const port = Number(process.argv[process.argv.indexOf('--http') + 1]) || 0;
  const httpServer = createServer(async (req, res) => {
    if (!req.url?.startsWith('/mcp')) {
      res.writeHead(404).end();
      return;
    }
    if (req.method !== 'POST') {
      // Stateless: no standalone SSE stream, nothing to delete.
      res.writeHead(405, { allow: 'POST' }).end();
      return;
    }
    // Stateless (no id generator given): a fresh server and transport per request, as the SDK's examples do.
    const server = buildServer();
    const transport = new StreamableHTTPServerTransport({ enableJsonResponse: true });
    res.on('close', () => {
      transport.close();
      server.close();
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(req, res);
    } catch (err) {
      if (!res.headersSent) res.writeHead(500).end(String(err));
    }
  });
  httpServer.keepAliveTimeout = 60_000;
  httpServer.listen(port, '127.0.0.1', () => {
    const { port: bound } = /** @type {import('node:net').AddressInfo} */ (httpServer.address());
    process.stdout.write(`${JSON.stringify({ url: `http://127.0.0.1:${bound}/mcp` })}\n`);
  });
  const stop = () => httpServer.close(() => process.exit(0));
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
