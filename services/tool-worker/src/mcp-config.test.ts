import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError } from '@agentq/shared/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isHttpServer, loadMcpConfig, parseMcpConfig } from './mcp-config.js';

const SRC = 'MCP_CONFIG /x/mcp.json';

function catchError(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected an error');
}

function problems(json: unknown): string[] {
  try {
    parseMcpConfig(json, SRC);
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    return (err as ConfigError).problems;
  }
  throw new Error('expected a ConfigError');
}

describe('parseMcpConfig', () => {
  it('parses stdio and http servers into tagged entries', () => {
    const config = parseMcpConfig(
      {
        mcpServers: {
          memory: { command: 'node', args: ['server.js'], env: { MEMORY_FILE_PATH: '/tmp/m' }, cwd: '/tmp' },
          'crm-1': { url: 'https://crm.example/mcp', headers: { authorization: 'Bearer x' }, timeout_ms: 5000 },
          off: { command: 'nope', disabled: true },
          tagged: { type: 'stdio', command: 'x' },
        },
      },
      SRC,
    );
    expect(config.mcpServers.memory).toEqual({
      command: 'node',
      args: ['server.js'],
      env: { MEMORY_FILE_PATH: '/tmp/m' },
      cwd: '/tmp',
    });
    expect(config.mcpServers['crm-1']).toEqual({
      url: 'https://crm.example/mcp',
      headers: { authorization: 'Bearer x' },
      timeout_ms: 5000,
    });
    expect(isHttpServer(config.mcpServers['crm-1'])).toBe(true);
    expect(isHttpServer(config.mcpServers.memory)).toBe(false);
    expect(config.mcpServers.off).toEqual({ command: 'nope', disabled: true });
    expect(config.mcpServers.tagged).toEqual({ command: 'x' });
  });

  it('accepts an empty server list', () => {
    expect(parseMcpConfig({ mcpServers: {} }, SRC)).toEqual({ mcpServers: {} });
  });

  it('names the path of a bad url', () => {
    expect(problems({ mcpServers: { crm: { url: 'not a url' } } })).toEqual([
      `${SRC}: mcpServers.crm.url: Invalid URL`,
    ]);
    expect(problems({ mcpServers: { crm: { url: 'ftp://host/x' } } })).toEqual([
      `${SRC}: mcpServers.crm.url: Invalid URL`,
    ]);
  });

  it('reports one line per problem', () => {
    const lines = problems({
      mcpServers: {
        a: { command: 'x', args: 'not-an-array' },
        b: { url: 'http://h/mcp', timeout_ms: -5 },
        c: { env: { A: 'b' } },
      },
    });
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^MCP_CONFIG \/x\/mcp\.json: mcpServers\.a\.args: /);
    expect(lines[1]).toMatch(/^MCP_CONFIG \/x\/mcp\.json: mcpServers\.b\.timeout_ms: /);
    expect(lines[2]).toBe(`${SRC}: mcpServers.c: needs either command (stdio) or url (Streamable HTTP)`);
  });

  it('rejects mixed and unsupported transports', () => {
    expect(problems({ mcpServers: { a: { command: 'x', url: 'http://h/mcp' } } })).toEqual([
      `${SRC}: mcpServers.a.url: give either command (stdio) or url (Streamable HTTP), not both`,
    ]);
    expect(problems({ mcpServers: { a: { url: 'http://h/mcp', args: ['x'] } } })).toEqual([
      `${SRC}: mcpServers.a.args: only for command (stdio) servers`,
    ]);
    expect(problems({ mcpServers: { a: { command: 'x', headers: { a: 'b' } } } })).toEqual([
      `${SRC}: mcpServers.a.headers: only for url servers`,
    ]);
    expect(problems({ mcpServers: { a: { type: 'sse', url: 'http://h/sse' } } })[0]).toMatch(
      /mcpServers\.a\.type: the SSE transport is not supported/,
    );
  });

  it('rejects server names that cannot prefix tool names', () => {
    expect(problems({ mcpServers: { 'my.server': { command: 'x' } } })).toEqual([
      `${SRC}: mcpServers.my.server: server name must match ^[A-Za-z0-9_-]+$`,
    ]);
    expect(problems({ mcpServers: { a__b: { command: 'x' } } })).toEqual([
      `${SRC}: mcpServers.a__b: server name must not contain "__" (tool names are <server>__<tool>)`,
    ]);
  });

  it('rejects a file without mcpServers', () => {
    expect(problems([])).toEqual([`${SRC}: must be a JSON object with a "mcpServers" object`]);
    expect(problems({ servers: {} })).toEqual([`${SRC}: mcpServers: must be an object of named servers`]);
  });
});

describe('loadMcpConfig', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'agentq-mcp-config-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads a valid file', async () => {
    const path = join(dir, 'ok.json');
    await writeFile(path, JSON.stringify({ mcpServers: { crm: { url: 'http://127.0.0.1:1/mcp' } } }));
    expect(loadMcpConfig(path)).toEqual({ mcpServers: { crm: { url: 'http://127.0.0.1:1/mcp' } } });
  });

  it('names the path when the file is missing', async () => {
    const path = join(dir, 'missing.json');
    expect(catchError(() => loadMcpConfig(path))).toMatchObject({ problems: [`MCP_CONFIG ${path}: file not found`] });
  });

  it('names the path when the JSON is bad', async () => {
    const path = join(dir, 'bad.json');
    await writeFile(path, '{"mcpServers": ');
    const err = catchError(() => loadMcpConfig(path));
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).problems).toHaveLength(1);
    expect((err as ConfigError).problems[0]).toMatch(new RegExp(`^MCP_CONFIG ${path}: not valid JSON: `));
  });

  it('prefixes schema problems with MCP_CONFIG and the path', async () => {
    const path = join(dir, 'schema.json');
    await writeFile(path, JSON.stringify({ mcpServers: { crm: { url: 'x' } } }));
    expect(catchError(() => loadMcpConfig(path))).toMatchObject({
      problems: [`MCP_CONFIG ${path}: mcpServers.crm.url: Invalid URL`],
    });
  });
});
