// Lua scripts of the run store. Each guards a write with a marker field so that a retried or
// re-delivered job can never append a message or count usage twice.

/**
 * KEYS: run, messages, steps, events, then the run keys of every ancestor (for usage_total).
 * ARGV: depth, assistant message JSON, step JSON, prompt, completion, total tokens, events
 * maxlen, `step.completed` event data JSON.
 * Returns the step already stored when this depth was committed before, 'terminal' when the
 * run has ended meanwhile, or false when this call committed it.
 */
export const COMMIT_STEP = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 'missing' end
local status = redis.call('HGET', KEYS[1], 'status')
if status == 'completed' or status == 'failed' or status == 'cancelled' or status == 'incomplete' then
  return 'terminal'
end
if redis.call('HSETNX', KEYS[1], 'm:a:' .. ARGV[1], 1) == 0 then
  return redis.call('HGET', KEYS[3], ARGV[1])
end
redis.call('RPUSH', KEYS[2], ARGV[2])
redis.call('HSET', KEYS[3], ARGV[1], ARGV[3])
redis.call('HSET', KEYS[1], 'depth', ARGV[1])
local fields = { 'prompt_tokens', 'completion_tokens', 'total_tokens' }
for i, f in ipairs(fields) do
  redis.call('HINCRBY', KEYS[1], 'u:' .. f, ARGV[3 + i])
end
redis.call('HINCRBY', KEYS[1], 'u:model_calls', 1)
for k = 1, #KEYS do
  if k == 1 or k >= 5 then
    if k == 1 or redis.call('EXISTS', KEYS[k]) == 1 then
      for i, f in ipairs(fields) do
        redis.call('HINCRBY', KEYS[k], 'ut:' .. f, ARGV[3 + i])
      end
      redis.call('HINCRBY', KEYS[k], 'ut:model_calls', 1)
    end
  end
end
redis.call('XADD', KEYS[4], 'MAXLEN', '~', ARGV[7], '*', 'type', 'step.completed', 'data', ARGV[8])
return false
`;

/**
 * Lua, shared by APPEND_TOOL_MESSAGES and COMPLETE_TOOL_CALL: appends the tool messages of the
 * step at `depth` (JSON strings, in call order) once per depth, unless the run has ended; counts
 * them in the run's usage and every existing ancestor's usage_total, and moves the run's depth
 * on. Returns 1 if appended now, 0 if appended before or the run has ended.
 */
const APPEND_ROUND_LUA = `
local function appendRound(runKey, messagesKey, ancestorKeys, depth, msgs)
  local status = redis.call('HGET', runKey, 'status')
  if not status or status == 'completed' or status == 'failed' or status == 'cancelled' or status == 'incomplete' then
    return 0
  end
  if redis.call('HSETNX', runKey, 'm:t:' .. depth, 1) == 0 then return 0 end
  local n = #msgs
  if n > 0 then redis.call('RPUSH', messagesKey, unpack(msgs)) end
  redis.call('HINCRBY', runKey, 'u:tool_calls', n)
  redis.call('HINCRBY', runKey, 'ut:tool_calls', n)
  redis.call('HSET', runKey, 'depth', tonumber(depth) + 1)
  for _, key in ipairs(ancestorKeys) do
    if redis.call('EXISTS', key) == 1 then redis.call('HINCRBY', key, 'ut:tool_calls', n) end
  end
  return 1
end
`;

/**
 * KEYS: run, messages, then the run keys of every ancestor. ARGV: depth of the step whose
 * results these are, then the tool messages (JSON) in call order.
 * Returns 1 if appended now, 0 if they were appended before or the run has ended.
 */
export const APPEND_TOOL_MESSAGES = `${APPEND_ROUND_LUA}
local ancestors = {}
for k = 3, #KEYS do ancestors[#ancestors + 1] = KEYS[k] end
local msgs = {}
for i = 2, #ARGV do msgs[#msgs + 1] = ARGV[i] end
return appendRound(KEYS[1], KEYS[2], ancestors, ARGV[1], msgs)
`;

/**
 * KEYS: run, events. ARGV: now (ISO), maxlen, event data JSON.
 * queued → running; returns the new event id, or false if the run was not queued.
 */
export const START_RUN = `
if redis.call('HGET', KEYS[1], 'status') ~= 'queued' then return false end
redis.call('HSET', KEYS[1], 'status', 'running', 'started_at', ARGV[1])
return redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', 'type', 'run.started', 'data', ARGV[3])
`;

/**
 * KEYS: run, events, then every other key of the run (to expire). ARGV: retention seconds,
 * maxlen, event type, status, stop_reason, completed_at, output, output_parsed, error, event data
 * (JSON; the run object is added by the caller after). Returns 1 if this call ended the run.
 */
export const FINISH_RUN = `
local status = redis.call('HGET', KEYS[1], 'status')
if not status or status == 'completed' or status == 'failed' or status == 'cancelled' or status == 'incomplete' then
  return 0
end
redis.call('HSET', KEYS[1], 'status', ARGV[4], 'stop_reason', ARGV[5], 'completed_at', ARGV[6],
  'output', ARGV[7], 'output_parsed', ARGV[8], 'error', ARGV[9])
if redis.call('HEXISTS', KEYS[1], 'started_at') == 0 then
  redis.call('HSET', KEYS[1], 'started_at', ARGV[6])
end
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[2], '*', 'type', ARGV[3], 'data', ARGV[10])
for k = 1, #KEYS do redis.call('EXPIRE', KEYS[k], ARGV[1]) end
return 1
`;

/**
 * KEYS: the step's tool hash, events, then (when the round's size is known) run, messages and
 * the ancestors' run hashes. ARGV: index, result JSON, maxlen, event data JSON, then depth, the
 * number of calls in the round and this call's `tool` message JSON.
 * Stores a tool result unless one is stored, and only then appends `tool.completed`. The call
 * that stores the round's last result also appends the round's `tool` messages, in call order,
 * exactly as APPEND_TOOL_MESSAGES would (same marker, same counters), so the next turn finds its
 * transcript complete and writes nothing before its model call. If a call of the round has no
 * result (its job failed for good) or its result came without a message (stored by a worker of an
 * earlier version), nothing is appended here and the next turn appends the messages itself.
 * Returns the stored result (this one, or the earlier one).
 */
export const COMPLETE_TOOL_CALL = `${APPEND_ROUND_LUA}
if redis.call('HSETNX', KEYS[1], ARGV[1], ARGV[2]) == 0 then return redis.call('HGET', KEYS[1], ARGV[1]) end
redis.call('XADD', KEYS[2], 'MAXLEN', '~', ARGV[3], '*', 'type', 'tool.completed', 'data', ARGV[4])
if #KEYS < 4 then return ARGV[2] end
redis.call('HSET', KEYS[1], ARGV[1] .. ':msg', ARGV[7])
local fields = {}
for i = 0, tonumber(ARGV[6]) - 1 do fields[#fields + 1] = i .. ':msg' end
local msgs = redis.call('HMGET', KEYS[1], unpack(fields))
for i = 1, #fields do if not msgs[i] then return ARGV[2] end end
local ancestors = {}
for k = 5, #KEYS do ancestors[#ancestors + 1] = KEYS[k] end
if appendRound(KEYS[3], KEYS[4], ancestors, ARGV[5], msgs) == 1 then redis.call('HDEL', KEYS[1], unpack(fields)) end
return ARGV[2]
`;

/** The run fields a tool call needs (HMGET, not HGETALL: the run hash grows with each step). */
export const TOOL_CALL_RUN_FIELDS = ['spec', 'status', 'depth', 'owner', 'parent_run_id', 'root_run_id', 'created_at'];

/**
 * KEYS: the step's tool hash, run, events. ARGV: index, running marker JSON, maxlen,
 * `tool.started` event data JSON ('' for none), then the run fields to read.
 * One round trip to begin a tool call: returns {stored result} if the call finished before;
 * {false, run fields…} if the run is gone or has ended; else marks the attempt running,
 * appends `tool.started` and returns {false, run fields…, the marker of an earlier attempt}.
 */
export const BEGIN_TOOL_CALL = `
local stored = redis.call('HGET', KEYS[1], ARGV[1])
if stored then return { stored } end
local fields = {}
for i = 5, #ARGV do fields[#fields + 1] = ARGV[i] end
local run = redis.call('HMGET', KEYS[2], unpack(fields))
local out = { false }
for i = 1, #run do out[#out + 1] = run[i] end
local status = run[2]
if not status or status == 'completed' or status == 'failed' or status == 'cancelled' or status == 'incomplete' then
  return out
end
local field = ARGV[1] .. ':running'
out[#out + 1] = redis.call('HGET', KEYS[1], field)
redis.call('HSET', KEYS[1], field, ARGV[2])
if ARGV[4] ~= '' then
  redis.call('XADD', KEYS[3], 'MAXLEN', '~', ARGV[3], '*', 'type', 'tool.started', 'data', ARGV[4])
end
return out
`;
