import type { RedisClient } from '../infra/redis.js';
import { luaSource } from './lua-source.js';

/** What a script takes beside its keys: strings and numbers, in the order its header lists. */
export type ScriptArg = string | number;

/**
 * A store script's signature: how its named keys and arguments become `KEYS` and `ARGV` (in the
 * order the script's header lists them) and what its reply means.
 */
export interface ScriptSpec<K, A, R> {
  /** The script's file: `scripts/<file>.lua`. */
  file: string;
  keys(keys: K): string[];
  args(args: A): ScriptArg[];
  reply(raw: unknown): R;
}

/** A store script called by name: `await commitStep(redis, { runKey, … }, { depth, … })`. */
export type RedisScript<K, A, R> = ((redis: RedisClient, keys: K, args: A) => Promise<R>) & {
  readonly file: string;
  /** The text Redis runs (includes and constants resolved). */
  readonly lua: () => string;
};

type Invoker = (numKeys: number, ...keysAndArgs: ScriptArg[]) => Promise<unknown>;

/**
 * Declares a store script. Its text is read when it is first called, and defined on each
 * connection it is called on (ioredis sends `EVALSHA`, and the text when Redis does not know it).
 */
export function redisScript<K, A, R>(spec: ScriptSpec<K, A, R>): RedisScript<K, A, R> {
  const command = `agentq_${spec.file.replace(/\W/g, '_')}`;
  let lua: string | undefined;
  const text = () => (lua ??= luaSource(spec.file));
  const call = async (redis: RedisClient, keys: K, args: A): Promise<R> => {
    const commands = redis as unknown as Record<string, Invoker | undefined>;
    if (!commands[command]) redis.defineCommand(command, { lua: text() });
    const keyList = spec.keys(keys);
    const raw = await (commands[command] as Invoker).call(redis, keyList.length, ...keyList, ...spec.args(args));
    return spec.reply(raw);
  };
  return Object.assign(call, { file: spec.file, lua: text });
}
