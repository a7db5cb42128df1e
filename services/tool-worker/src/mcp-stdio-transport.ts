import { spawn, type ChildProcess } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import { JSONRPCMessageSchema, type JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { coalesceWrites } from '@agentq/shared/infra';
import { envelopeOf, LineReader, standInAnswer, tooLargeText, type OversizedMessage } from './mcp-message-limit.js';

/** How to start a stdio server, and the most one message from it may hold. */
export interface StdioServerParams {
  command: string;
  args?: string[];
  /** Added to a safe default set (PATH, HOME, …), not to the worker's whole environment. */
  env?: Record<string, string>;
  cwd?: string;
  maxMessageBytes: number;
}

const CLOSE_GRACE_MS = 2_000;

/**
 * The client side of a stdio MCP server, as the SDK's StdioClientTransport but with a bound on
 * one message: an answer over `maxMessageBytes` is read past, never held, and becomes an error
 * answer to its own request, so the server and the other calls on it carry on. (The SDK's reader
 * instead closes the transport, which kills the server and every call in flight on it.)
 */
export class BoundedStdioTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  /** The server's stderr, readable before start() so that no early line is lost. */
  readonly stderr = new PassThrough();
  readonly #params: StdioServerParams;
  readonly #reader: LineReader;
  #child: ChildProcess | undefined;

  constructor(params: StdioServerParams) {
    this.#params = params;
    this.#reader = new LineReader(params.maxMessageBytes);
  }

  /** The child process's pid while it runs. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  start(): Promise<void> {
    if (this.#child) throw new Error('BoundedStdioTransport already started');
    const p = this.#params;
    return new Promise((resolve, reject) => {
      const child = spawn(p.command, p.args ?? [], {
        env: { ...getDefaultEnvironment(), ...p.env },
        cwd: p.cwd,
        stdio: ['pipe', 'pipe', 'pipe'],
        shell: false,
      });
      this.#child = child;
      child.on('error', (err) => {
        reject(err);
        this.onerror?.(err);
      });
      child.on('spawn', () => resolve());
      child.on('close', () => {
        if (this.#child === child) this.#child = undefined;
        this.#reader.clear();
        this.onclose?.();
      });
      child.stdin!.on('error', (err) => this.onerror?.(err));
      // A round's calls, and the calls of the runs whose rounds start in the same turn, reach the
      // server in one write (and wake it once) instead of one each.
      coalesceWrites(child.stdin);
      child.stdout!.on('data', (chunk: Buffer) => this.#read(chunk));
      child.stdout!.on('error', (err) => this.onerror?.(err));
      child.stderr!.pipe(this.stderr);
    });
  }

  async send(message: JSONRPCMessage): Promise<void> {
    const stdin = this.#child?.stdin;
    // Thrown before anything is written: the caller knows the request never left.
    if (!stdin?.writable) throw new Error('Not connected');
    if (stdin.write(`${JSON.stringify(message)}\n`)) return;
    // A pipe that breaks while full never drains; its close ends the wait (and the connection).
    await new Promise<void>((resolve) => {
      const done = () => {
        stdin.off('drain', done);
        stdin.off('close', done);
        resolve();
      };
      stdin.on('drain', done);
      stdin.on('close', done);
    });
  }

  /** Ends the server's stdin, then SIGTERM, then SIGKILL, each after a grace period. */
  async close(): Promise<void> {
    const child = this.#child;
    if (!child) return;
    this.#child = undefined;
    const closed = new Promise<void>((resolve) => {
      if (child.exitCode !== null || child.signalCode !== null) resolve();
      else child.once('close', () => resolve());
    });
    const within = (ms: number) =>
      Promise.race([closed.then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), ms).unref())]);
    child.stdin?.end();
    if (await within(CLOSE_GRACE_MS)) return;
    child.kill('SIGTERM');
    if (await within(CLOSE_GRACE_MS)) return;
    child.kill('SIGKILL');
  }

  #read(chunk: Buffer): void {
    for (const line of this.#reader.push(chunk)) {
      if ('oversized' in line) {
        this.#oversized(line.oversized);
        continue;
      }
      if (!line.text.trim()) continue;
      let message: JSONRPCMessage;
      try {
        message = JSONRPCMessageSchema.parse(JSON.parse(line.text));
      } catch (err) {
        this.onerror?.(err as Error);
        continue;
      }
      this.onmessage?.(message);
    }
  }

  #oversized(m: OversizedMessage): void {
    const { id, response } = envelopeOf(m);
    const text = tooLargeText(m.bytes, this.#params.maxMessageBytes);
    // The answer is replaced by an error answer to the same request; anything else is dropped.
    if (response && id !== undefined) this.onmessage?.(standInAnswer(id, 'message_too_large', text));
    else this.onerror?.(new Error(`dropped a message from the server: ${text}`));
  }
}
