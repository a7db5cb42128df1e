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

/** `xadd(key, maxlen, type, data)`: appends one event to a run's capped stream. */
export const XADD_EVENT_LUA = `
local function xadd(key, maxlen, type, data)
  return redis.call('XADD', key, 'MAXLEN', '~', maxlen, '*', 'type', type, 'data', data)
end
`;

/**
 * `appendRound(runKey, messagesKey, ancestorKeys, depth, msgs)`: appends the tool messages of
 * the step at `depth` (JSON strings, in call order) once per depth, unless the run has ended;
 * counts them in the run's usage and every existing ancestor's usage_total and their bytes in the
 * transcript's size (a run stored before sizes were kept has none), and moves the run's depth on. Returns 1 if appended now, 0 if appended before, if the run has ended, or if the step's assistant message is not in the transcript (its commit lost).
 */
export const APPEND_ROUND_LUA = `${RUN_OVER_LUA}
local function appendRound(runKey, messagesKey, ancestorKeys, depth, msgs)
  local run = redis.call('HMGET', runKey, ${lua(F.status)}, ${lua(F.transcriptBytes)}, ${lua(F.stepMarkerPrefix)} .. depth)
  if runOver(run[1]) then return 0 end
  -- Tool messages follow the assistant message that asked for them, or nothing: a step whose
  -- commit a failover lost (replication is asynchronous) gets no orphan tool messages.
  if not run[3] then return 0 end
  if redis.call('HSETNX', runKey, ${lua(F.roundMarkerPrefix)} .. depth, '1') == 0 then return 0 end
  local n = #msgs
  if n > 0 then redis.call('RPUSH', messagesKey, unpack(msgs)) end
  if run[2] then
    local bytes = 0
    for _, m in ipairs(msgs) do bytes = bytes + #m end
    redis.call('HINCRBY', runKey, ${lua(F.transcriptBytes)}, bytes)
  end
  redis.call('HINCRBY', runKey, ${lua(`${F.usagePrefix}tool_calls`)}, n)
  redis.call('HINCRBY', runKey, ${lua(`${F.usageTotalPrefix}tool_calls`)}, n)
  redis.call('HSET', runKey, ${lua(F.depth)}, tonumber(depth) + 1)
  for _, key in ipairs(ancestorKeys) do
    if redis.call('EXISTS', key) == 1 then redis.call('HINCRBY', key, ${lua(`${F.usageTotalPrefix}tool_calls`)}, n) end
  end
  return 1
end
`;

/** Events kept per run stream (approximately: `MAXLEN ~`). */
export const EVENTS_MAXLEN = 10_000;
