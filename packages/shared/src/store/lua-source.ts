import { readFileSync } from 'node:fs';
import { TERMINAL_STATUSES } from '../core/schemas/run.js';
import { USAGE_FIELDS } from '../core/schemas/usage.js';
import { ACTION_FIELDS, EVENTS_MAXLEN, RUN_FIELDS, TOOL_CALL_FIELDS } from './keys.js';

/** Where the scripts live: beside this module, in the sources and in the build alike. */
const SCRIPTS_DIR = new URL('./scripts/', import.meta.url);

/** A Lua string literal. */
export const luaString = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/**
 * The names a script may use for the project's constants, so that there is one list of each:
 * `F.<field>` (a run hash's field names, keys.ts), `U.<counter>` and `UT.<counter>` (a run's usage
 * and usage_total counters), `T.<suffix>` (a tool-call hash's field suffixes), `A.<suffix>` (a
 * request hash's), `C.<name>` (numbers and expressions).
 */
function constants(): Record<string, Record<string, string>> {
  const fields = Object.fromEntries(
    Object.entries(RUN_FIELDS).map(([name, value]) => [name, luaString(value)] as const),
  );
  return {
    F: fields,
    T: {
      runningSuffix: luaString(TOOL_CALL_FIELDS.runningSuffix),
      messageSuffix: luaString(TOOL_CALL_FIELDS.messageSuffix),
    },
    A: { decisionSuffix: luaString(ACTION_FIELDS.decisionSuffix) },
    U: Object.fromEntries(USAGE_FIELDS.map((f) => [f, luaString(`${RUN_FIELDS.usagePrefix}${f}`)])),
    UT: Object.fromEntries(USAGE_FIELDS.map((f) => [f, luaString(`${RUN_FIELDS.usageTotalPrefix}${f}`)])),
    C: {
      eventsMaxlen: String(EVENTS_MAXLEN),
      // A Lua expression over a local named `status`: true when it is a terminal status.
      statusIsTerminal: `(${[...TERMINAL_STATUSES].map((st) => `status == ${luaString(st)}`).join(' or ')})`,
    },
  };
}

const INCLUDE = /^--- @include "([a-z0-9-]+)"\s*$/gm;
const CONSTANT = /\b(UT|[FTACU])\.([A-Za-z_]+)\b/g;

/**
 * The text of a store script as Redis runs it: `scripts/<name>.lua` with each `--- @include
 * "<piece>"` replaced by `scripts/includes/<piece>.lua` (each piece once, however often it is
 * included, in the order first met) and each constant (`F.status`) by its value. An unknown
 * constant or piece is an error here, when the script is loaded, never in Redis.
 */
export function luaSource(name: string, read: (path: URL) => string = (p) => readFileSync(p, 'utf8')): string {
  const values = constants();
  const included = new Set<string>();
  const expand = (text: string): string =>
    text.replace(INCLUDE, (_line, piece: string) => {
      if (included.has(piece)) return '';
      included.add(piece);
      return expand(read(new URL(`includes/${piece}.lua`, SCRIPTS_DIR)));
    });
  const text = expand(read(new URL(`${name}.lua`, SCRIPTS_DIR)));
  return text.replace(CONSTANT, (token, table: string, key: string) => {
    const value = values[table]?.[key];
    if (value === undefined) throw new Error(`store script ${name}: unknown constant ${token}`);
    return value;
  });
}
