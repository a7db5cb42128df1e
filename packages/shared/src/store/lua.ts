import { TERMINAL_STATUSES } from '../schemas/run.js';
import { RUN_FIELDS as F } from './keys.js';

// Lua shared by the store's scripts. Field names and statuses come from the TypeScript
// constants, so the scripts cannot drift from the code that reads what they write.

/** A Lua string literal. */
export const lua = (s: string) => `'${s.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;

/**
 * `runOver(status)`: true when a run is gone (its status read as false) or has a terminal
 * status. Generated from the one list of terminal statuses.
 */
export const RUN_OVER_LUA = `
local function runOver(status)
  return (not status) or ${[...TERMINAL_STATUSES].map((s) => `status == ${lua(s)}`).join(' or ')}
end
`;

/**
 * `xadd(key, maxlen, type, data)`: appends one event to a run's capped stream and trims it to
 * about `maxlen` events; `appendEvent(key, type, data)` appends only (see EVENTS_MAXLEN).
 */
export const XADD_EVENT_LUA = `
local function xadd(key, maxlen, type, data)
  return redis.call('XADD', key, 'MAXLEN', '~', maxlen, '*', 'type', type, 'data', data)
end
local function appendEvent(key, type, data)
  return redis.call('XADD', key, '*', 'type', type, 'data', data)
end
`;

/**
 * `plus(stored, n)`: a counter as stored (a string, or false when unset) plus the number n, as
 * the decimal string HSET writes. A counter read, summed and written in one HSET with a script's
 * other writes costs Redis less than an HINCRBY of its own. `%d`: a Lua number handed to Redis
 * as it is would be formatted as a float.
 */
export const PLUS_LUA = `
local function plus(stored, n)
  return string.format('%d', (tonumber(stored) or 0) + n)
end
`;

/**
 * `appendRound(runKey, messagesKey, ancestorKeys, depth, msgs)`: appends the tool messages of
 * the step at `depth` (JSON strings, in call order) once per depth, unless the run has ended;
 * counts them in the run's usage and every existing ancestor's usage_total and their bytes in the
 * transcript's size (a run stored before sizes were kept has none), and moves the run's depth on. Returns 1 if appended now, 0 if appended before, if the run has ended, or if the step's assistant message is not in the transcript (its commit lost).
 */
export const APPEND_ROUND_LUA = `${RUN_OVER_LUA}${PLUS_LUA}
local function appendRound(runKey, messagesKey, ancestorKeys, depth, msgs)
  local marker = ${lua(F.roundMarkerPrefix)} .. depth
  local run = redis.call('HMGET', runKey, ${lua(F.status)}, ${lua(F.transcriptBytes)}, ${lua(F.stepMarkerPrefix)} .. depth, marker, ${lua(`${F.usagePrefix}tool_calls`)}, ${lua(`${F.usageTotalPrefix}tool_calls`)})
  if runOver(run[1]) then return 0 end
  -- Tool messages follow the assistant message that asked for them, or nothing: a step whose
  -- commit a failover lost (replication is asynchronous) gets no orphan tool messages.
  if not run[3] then return 0 end
  if run[4] then return 0 end
  local n = #msgs
  if n > 0 then redis.call('RPUSH', messagesKey, unpack(msgs)) end
  -- The marker, the counters and the depth in one HSET (see plus).
  local writes = { marker, '1', ${lua(`${F.usagePrefix}tool_calls`)}, plus(run[5], n), ${lua(`${F.usageTotalPrefix}tool_calls`)}, plus(run[6], n), ${lua(F.depth)}, plus(depth, 1) }
  if run[2] then
    local bytes = 0
    for _, m in ipairs(msgs) do bytes = bytes + #m end
    writes[#writes + 1] = ${lua(F.transcriptBytes)}
    writes[#writes + 1] = plus(run[2], bytes)
  end
  redis.call('HSET', runKey, unpack(writes))
  for _, key in ipairs(ancestorKeys) do
    if redis.call('EXISTS', key) == 1 then redis.call('HINCRBY', key, ${lua(`${F.usageTotalPrefix}tool_calls`)}, n) end
  end
  return 1
end
`;

/**
 * Events kept per run stream (approximately: `MAXLEN ~`). The stream is trimmed when a step is
 * committed, when the run ends, and by the appends that may come many to a step (the model's
 * text as it streams, sub-runs, requests for an answer); a run's creation and start and a
 * round's `tool.*` events append without trimming (appendEvent), so a stream holds at most this
 * many and one step's events. Trimming's three arguments cost Redis about 5 K instructions an
 * event, a seventh of an `XADD` inside a script.
 */
export const EVENTS_MAXLEN = 10_000;
