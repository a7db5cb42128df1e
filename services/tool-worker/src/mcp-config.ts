import { readFileSync } from 'node:fs';
import { ConfigError } from '@agentq/shared/core';
import { z } from 'zod';

/** Server names become tool-name prefixes (`<server>__<tool>`), so they are kept to a safe alphabet. */
export const MCP_SERVER_NAME_PATTERN = /^[A-Za-z0-9_-]+$/;

const stringMap = z.record(z.string(), z.string());

// One flat object instead of a union: a union's errors ("Invalid input") would not say
// which field is wrong, and the cross-field rules read better as plain checks.
const rawServerSchema = z.object({
  // Other MCP clients write `"type"` into the same file; accept theirs, reject what we cannot speak.
  type: z.enum(['stdio', 'http', 'streamable-http', 'streamableHttp', 'sse']).optional(),
  command: z.string().min(1, 'must not be empty').optional(),
  args: z.array(z.string()).optional(),
  env: stringMap.optional(),
  cwd: z.string().min(1, 'must not be empty').optional(),
  url: z.url({ protocol: /^https?$/ }).optional(),
  headers: stringMap.optional(),
  timeout_ms: z.number().int().positive().optional(),
  disabled: z.boolean().optional(),
});

const serverSchema = rawServerSchema
  .superRefine((s, ctx) => {
    const problem = (path: string, message: string) => ctx.addIssue({ code: 'custom', path: [path], message });
    if (s.type === 'sse')
      problem('type', 'the SSE transport is not supported; use Streamable HTTP (a url) or stdio (a command)');
    if (s.command !== undefined && s.url !== undefined) {
      problem('url', 'give either command (stdio) or url (Streamable HTTP), not both');
      return;
    }
    if (s.command === undefined && s.url === undefined) {
      ctx.addIssue({ code: 'custom', message: 'needs either command (stdio) or url (Streamable HTTP)' });
      return;
    }
    if (s.command !== undefined) {
      if (s.headers !== undefined) problem('headers', 'only for url servers');
      if (s.type !== undefined && s.type !== 'stdio') problem('type', `"${s.type}" does not match a command server`);
    } else {
      for (const key of ['args', 'env', 'cwd'] as const)
        if (s[key] !== undefined) problem(key, 'only for command (stdio) servers');
      if (s.type === 'stdio') problem('type', '"stdio" does not match a url server');
    }
  })
  .transform((s): McpServerConfig => {
    // `type` has done its job (checked above); the result keeps only what the file said.
    const common = {
      ...(s.timeout_ms !== undefined && { timeout_ms: s.timeout_ms }),
      ...(s.disabled !== undefined && { disabled: s.disabled }),
    };
    if (s.url !== undefined) return { url: s.url, ...(s.headers && { headers: s.headers }), ...common };
    return {
      command: s.command as string,
      ...(s.args && { args: s.args }),
      ...(s.env && { env: s.env }),
      ...(s.cwd !== undefined && { cwd: s.cwd }),
      ...common,
    };
  });

/** Zod schema of an `mcp.json` file (`{"mcpServers": {...}}`), parsing into {@link McpConfig}. */
export const mcpConfigSchema = z.object(
  {
    mcpServers: z
      .record(z.string(), serverSchema, { error: 'must be an object of named servers' })
      .superRefine((servers, ctx) => {
        for (const name of Object.keys(servers)) {
          if (!MCP_SERVER_NAME_PATTERN.test(name)) {
            ctx.addIssue({ code: 'custom', path: [name], message: 'server name must match ^[A-Za-z0-9_-]+$' });
          } else if (name.includes('__')) {
            ctx.addIssue({
              code: 'custom',
              path: [name],
              message: 'server name must not contain "__" (tool names are <server>__<tool>)',
            });
          }
        }
      }),
  },
  { error: 'must be a JSON object with a "mcpServers" object' },
);

/** Options every server may have, whatever its transport. */
interface McpServerCommon {
  /** Per-call timeout for this server's tools; overrides the caller's default when set. */
  timeout_ms?: number;
  /** A disabled server is neither connected nor listed. */
  disabled?: boolean;
}

/** A server started as a child process and spoken to over stdin/stdout. */
export interface McpStdioServerConfig extends McpServerCommon {
  command: string;
  args?: string[];
  /** Added to a small safe default environment (PATH, HOME, …), not to the worker's own. */
  env?: Record<string, string>;
  cwd?: string;
}

/** A remote server spoken to over Streamable HTTP. */
export interface McpHttpServerConfig extends McpServerCommon {
  url: string;
  headers?: Record<string, string>;
}

/** One server entry of `mcp.json`: a command (stdio) or a url (Streamable HTTP). */
export type McpServerConfig = McpStdioServerConfig | McpHttpServerConfig;

/** True for a Streamable HTTP server entry. */
export function isHttpServer(config: McpServerConfig): config is McpHttpServerConfig {
  return 'url' in config;
}

/** A parsed `mcp.json`. */
export interface McpConfig {
  mcpServers: Record<string, McpServerConfig>;
}

/**
 * Validates parsed `mcp.json` content; throws a ConfigError with one line per problem,
 * each starting with `source` (e.g. `MCP_CONFIG /etc/mcp.json: mcpServers.crm.url: Invalid URL`).
 */
export function parseMcpConfig(json: unknown, source: string): McpConfig {
  const result = mcpConfigSchema.safeParse(json);
  if (result.success) return result.data;
  throw new ConfigError(
    result.error.issues.map((issue) => {
      const path = issue.path.map(String).join('.');
      return path ? `${source}: ${path}: ${issue.message}` : `${source}: ${issue.message}`;
    }),
  );
}

/**
 * Reads and validates the `mcp.json` at `path` (synchronously: it runs once, at start, beside the
 * env config); every failure is a ConfigError naming `MCP_CONFIG <path>`.
 */
export function loadMcpConfig(path: string): McpConfig {
  const source = `MCP_CONFIG ${path}`;
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const reason = code === 'ENOENT' ? 'file not found' : `cannot read file: ${(err as Error).message}`;
    throw new ConfigError([`${source}: ${reason}`]);
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (err) {
    throw new ConfigError([`${source}: not valid JSON: ${(err as Error).message}`]);
  }
  return parseMcpConfig(json, source);
}
