--[[
  Commits a model step once per depth: appends its assistant message, stores its record, counts
  its usage in the run and in every ancestor's usage_total, and appends `step.completed`.
  The run's counters are read with its status and written in one HSET with its depth and the
  step's marker (each ancestor's in one HSET too): inside a script every command costs Redis more
  than a field read or written with others does. Lua numbers hold integers exactly to 2^53.

  Input:
    KEYS[1] runKey
    KEYS[2] messagesKey
    KEYS[3] stepsKey
    KEYS[4] eventsKey
    KEYS[5..] ancestorRunKeys   root first
    ARGV[1] depth
    ARGV[2] message            the assistant message (JSON)
    ARGV[3] step               the step record (JSON)
    ARGV[4] promptTokens
    ARGV[5] completionTokens
    ARGV[6] totalTokens
    ARGV[7] completedEvent     the `step.completed` event's data (JSON)
    ARGV[8] costNanos          the step's cost in nano-dollars, or '' when its price is not known

  Output:
    false when this call committed the step; the step stored before when this depth was
    committed already; 'missing' when the run is gone; 'terminal' when it or an ancestor has ended
]]
local runKey, messagesKey, stepsKey, eventsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local depth, message, step = ARGV[1], ARGV[2], ARGV[3]
local promptTokens, completionTokens, totalTokens = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local completedEvent, costNanos = ARGV[7], ARGV[8]

--- @include "run-over"
--- @include "events"
--- @include "plus"

local marker = F.stepMarkerPrefix .. depth
local run = redis.call('HMGET', runKey, F.status, F.transcriptBytes, marker,
  U.prompt_tokens, U.completion_tokens, U.total_tokens, U.model_calls,
  UT.prompt_tokens, UT.completion_tokens, UT.total_tokens, UT.model_calls)
if not run[1] and redis.call('EXISTS', runKey) == 0 then return 'missing' end
if runOver(run[1]) then return 'terminal' end
local ancestors = {}
for k = 5, #KEYS do
  local a = redis.call('HMGET', KEYS[k], F.status, UT.prompt_tokens, UT.completion_tokens, UT.total_tokens,
    UT.model_calls)
  if runOver(a[1]) then return 'terminal' end
  ancestors[k] = a
end
if run[3] then return redis.call('HGET', stepsKey, depth) end

redis.call('RPUSH', messagesKey, message)
redis.call('HSET', stepsKey, depth, step)
redis.call('HSET', runKey, marker, '1', F.depth, depth, F.transcriptBytes, plus(run[2], #message),
  U.prompt_tokens, plus(run[4], promptTokens), U.completion_tokens, plus(run[5], completionTokens),
  U.total_tokens, plus(run[6], totalTokens), U.model_calls, plus(run[7], 1),
  UT.prompt_tokens, plus(run[8], promptTokens), UT.completion_tokens, plus(run[9], completionTokens),
  UT.total_tokens, plus(run[10], totalTokens), UT.model_calls, plus(run[11], 1))
for k = 5, #KEYS do
  local a = ancestors[k]
  redis.call('HSET', KEYS[k], UT.prompt_tokens, plus(a[2], promptTokens), UT.completion_tokens,
    plus(a[3], completionTokens), UT.total_tokens, plus(a[4], totalTokens), UT.model_calls, plus(a[5], 1))
end
-- A cost is counted only where a price is known: a run without one has no cost field at all.
if costNanos ~= '' then
  redis.call('HINCRBY', runKey, F.usageCost, costNanos)
  redis.call('HINCRBY', runKey, F.usageTotalCost, costNanos)
  for k = 5, #KEYS do redis.call('HINCRBY', KEYS[k], F.usageTotalCost, costNanos) end
end
xadd(eventsKey, 'step.completed', completedEvent)
return false
