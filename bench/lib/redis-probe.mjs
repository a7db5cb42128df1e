// @ts-check
// Counts what a process sends to Redis, from the client side: every command by name (Lua
// scripts by their registered name: `evalsha:moveToFinished`, `evalsha:agentqCommitStep`) and
// every round trip: what one connection sends before any reply can have come back, i.e. the
// commands and pipelines (or MULTIs) it is handed in one stretch of code and the promise
// callbacks queued with it, which leave together (a connection that writes in bursts sends them
// in one write; see write-bursts.ts).
// Redis's own `INFO commandstats` cannot tell these apart: it also counts the commands that
// scripts run inside the server, and it does not know what arrived together.
//
// Loaded into the services with `NODE_OPTIONS=--import <this file>` by `npm run bench` for its
// Redis-cost scenario only; it patches ioredis (the one the service's own script resolves, so
// also another checkout's under BENCH_COMPARE), nothing of agentq.
// `kill -USR2 <pid>` writes the counters so far (and process.memoryUsage()) to
// $BENCH_PROBE_DIR/<pid>.json.
import { createRequire } from 'node:module';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';

const require = createRequire(process.argv[1] ?? join(import.meta.dirname, '..', '..', 'package.json'));
/**
 * ioredis's classes, patched below; what the patches read of them (scriptsSet, _queue, _transactions)
 * are internals its types do not declare.
 * @type {{ Redis: { prototype: any }, Pipeline: { prototype: any } }}
 */
const { Redis, Pipeline } = require('ioredis');

/** @type {{ commands: Record<string, number>, trips: number }} */
const counters = { commands: {}, trips: 0 };
/** @type {Map<string, string>} */
const scriptNames = new Map();

const bump = (/** @type {string} */ name) => {
  counters.commands[name] = (counters.commands[name] ?? 0) + 1;
};

const defineCommand = Redis.prototype.defineCommand;
/**
 * @this {any}
 * @param {string} name
 * @param {unknown} definition
 */
Redis.prototype.defineCommand = function (name, definition) {
  const r = defineCommand.call(this, name, definition);
  const sha = this.scriptsSet?.[name]?.sha;
  // BullMQ names its scripts `<name>:<version>`.
  if (sha) scriptNames.set(sha, name.replace(/:[\d.]+$/, '').replace(/-\d+$/, ''));
  return r;
};

/** @param {{ name: string, args?: unknown[] }} command */
function commandName(command) {
  const name = String(command.name).toLowerCase();
  if (name === 'evalsha' || name === 'eval') {
    const sha = String(command.args?.[0] ?? '');
    return `${name}:${scriptNames.get(sha) ?? (name === 'eval' ? 'script' : sha.slice(0, 8))}`;
  }
  if (name === 'client' || name === 'script' || name === 'config' || name === 'xinfo')
    return `${name}|${String(command.args?.[0] ?? '').toLowerCase()}`;
  return name;
}

// Connections with a round trip open: one that was handed something in the current stretch.
const open = new WeakSet();
/** @param {object} connection */
function trip(connection) {
  if (open.has(connection)) return;
  counters.trips++;
  open.add(connection);
  // Closed with the stretch: after the promise callbacks queued now (as write-bursts.ts's first burst).
  process.nextTick(() => open.delete(connection));
}

const sendCommand = Redis.prototype.sendCommand;
/**
 * @this {object}
 * @param {{ name: string, args?: unknown[] }} command
 * @param {{ isPipeline?: boolean }} [stream]
 */
Redis.prototype.sendCommand = function (command, stream) {
  bump(commandName(command));
  if (!stream?.isPipeline) trip(this);
  return sendCommand.call(this, command, stream);
};

const exec = Pipeline.prototype.exec;
/**
 * @this {any}
 * @param {unknown[]} args
 */
Pipeline.prototype.exec = function (...args) {
  // A MULTI passes through exec twice (the second time with EXEC queued); count the write once.
  if (this._queue?.length && !(this._transactions > 0)) trip(this.redis);
  return exec.apply(this, args);
};

if (process.env.BENCH_PROBE_DIR) {
  process.on('SIGUSR2', () => {
    const memory = process.memoryUsage();
    // With --expose-gc, also what survives a full collection: the live heap, not garbage.
    let afterGc;
    if (typeof globalThis.gc === 'function') {
      globalThis.gc();
      afterGc = process.memoryUsage();
    }
    writeFileSync(
      join(String(process.env.BENCH_PROBE_DIR), `${process.pid}.json`),
      JSON.stringify({
        pid: process.pid,
        at: Date.now(),
        memory,
        afterGc,
        ...counters,
        scripts: Object.fromEntries(scriptNames),
      }),
    );
  });
}
