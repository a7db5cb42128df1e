import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AnswerBytesInFlight, McpRegistry, parseMcpConfig } from '@agentq/tool-worker';
import { readEffects } from './fixtures/effect-mcp-server.js';

// The registry over Streamable HTTP against a real server process (test/fixtures/effect-mcp-server.ts)
// that answers with more than a message may hold, or dies with its answer stream open.

const FIXTURE = fileURLToPath(new URL('./fixtures/effect-mcp-server.ts', import.meta.url));

describe('McpRegistry over Streamable HTTP (the effect fixture)', () => {
  let dir: string;
  const children: ChildProcess[] = [];
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'agentq-mcp-http-limit-'));
  });
  afterAll(async () => {
    for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    await rm(dir, { recursive: true, force: true });
  });

  /** Starts the fixture (`--http` or `--http-json`) and a registry on it, as server `big`. */
  async function fixture(
    mode: string,
    effects: string,
    answersInFlight?: AnswerBytesInFlight,
    maxMessageBytes = 256 * 1024,
  ) {
    const child = spawn(process.execPath, [FIXTURE, mode, effects], { stdio: ['ignore', 'pipe', 'inherit'] });
    children.push(child);
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout!.setEncoding('utf8').on('data', (d: string) => {
        const m = /listening (\S+)/.exec(d);
        if (m) resolve(m[1]);
      });
      child.once('exit', () => reject(new Error('fixture exited')));
    });
    const registry = new McpRegistry({
      config: parseMcpConfig({ mcpServers: { big: { url } } }, 'test'),
      logger: pino({ level: 'silent' }),
      maxMessageBytes,
      answersInFlight,
    });
    await registry.start();
    return registry;
  }

  it('a call whose answer stream broke after it opened ends unknown_outcome at once', async () => {
    const effects = join(dir, 'stream.effects');
    const registry = await fixture('--http', effects);
    try {
      const out = await registry.call('big__notify_then_die', { key: 'k' }, { timeoutMs: 20_000 });
      expect(out.kind).toBe('unknown_outcome');
      expect(out.text).toMatch(
        new RegExp(
          '^the outcome is unknown: the connection to its server broke before it answered ' +
            String.raw`\(the answer stream closed without the answer\)`,
        ),
      );
      expect(readEffects(effects).filter((l) => l.startsWith('notify_then_die'))).toEqual(['notify_then_die k']);
    } finally {
      await registry.close();
    }
  });

  it.each([['--http'], ['--http-json']])(
    '%s: an answer over the limit fails that call alone; the server answers the next',
    async (mode) => {
      const effects = join(dir, `${mode}.effects`);
      const registry = await fixture(mode, effects);
      try {
        await registry.start();
        const out = await registry.call('big__big_output', { bytes: 1_000_000 }, { timeoutMs: 10_000 });
        expect(out.kind).toBe('server_error');
        expect(out.text).toMatch(
          /^the server's answer was over the 262144-byte limit on one MCP message \(\d+ bytes\)/,
        );
        await expect(registry.call('big__big_output', { bytes: 10 }, { timeoutMs: 10_000 })).resolves.toEqual({
          kind: 'ok',
          text: 'x'.repeat(10),
        });
        expect(readEffects(effects).filter((l) => l.startsWith('big_output'))).toEqual([
          'big_output 1000000',
          'big_output 10',
        ]);
      } finally {
        await registry.close();
      }
    },
  );

  it.each([['--http'], ['--http-json']])(
    '%s: many large answers at once through the bound on answers in flight: every call gets its whole answer',
    async (mode) => {
      // 40 answers of 2 MB at once through a bound of 4 MB, from a real server: every call gets
      // its whole answer (nothing cut, no reader left waiting), and nothing stays held after.
      // (That the bound holds when answers overlap: mcp-http-fetch.test.ts, whose answers arrive
      // interleaved; here the server sends them nearly one after another.)
      const MB = 1024 * 1024;
      const answers = new AnswerBytesInFlight(4 * MB, 4 * MB);
      const registry = await fixture(mode, join(dir, `${mode}-many.effects`), answers, 4 * MB);
      try {
        const outs = await Promise.all(
          Array.from({ length: 40 }, () => registry.call('big__big_output', { bytes: 2 * MB }, { timeoutMs: 30_000 })),
        );
        expect(outs.every((o) => o.kind === 'ok' && o.text.length === 2 * MB)).toBe(true);
        const { held, readers, peak } = answers.stats();
        expect({ held, readers }).toEqual({ held: 0, readers: 0 });
        expect(peak).toBeGreaterThan(2 * MB);
        expect(peak).toBeLessThanOrEqual(8 * MB + 40 * 64 * 1024);
      } finally {
        await registry.close();
      }
    },
  );
});
