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

  Output:
    false when this call committed the step; the step stored before when this depth was
    committed already; 'missing' when the run is gone; 'terminal' when it or an ancestor has ended
]]
local runKey, messagesKey, stepsKey, eventsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local depth, message, step = ARGV[1], ARGV[2], ARGV[3]
local promptTokens, completionTokens, totalTokens = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local completedEvent = ARGV[7]

--- @include "run-over"
--- @include "events"
--- @include "plus"

local counters = { 'prompt_tokens', 'completion_tokens', 'total_tokens', 'model_calls' }
local added = { promptTokens, completionTokens, totalTokens, 1 }
local own, total = {}, {}
for i, name in ipairs(counters) do
  own[i] = F.usagePrefix .. name
  total[i] = F.usageTotalPrefix .. name
end

local marker = F.stepMarkerPrefix .. depth
local run = redis.call('HMGET', runKey, F.status, F.transcriptBytes, marker,
  own[1], own[2], own[3], own[4], total[1], total[2], total[3], total[4])
if not run[1] and redis.call('EXISTS', runKey) == 0 then return 'missing' end
if runOver(run[1]) then return 'terminal' end
local ancestors = {}
for k = 5, #KEYS do
  local a = redis.call('HMGET', KEYS[k], F.status, total[1], total[2], total[3], total[4])
  if runOver(a[1]) then return 'terminal' end
  ancestors[k] = a
end
if run[3] then return redis.call('HGET', stepsKey, depth) end

redis.call('RPUSH', messagesKey, message)
redis.call('HSET', stepsKey, depth, step)
local writes = { marker, '1', F.depth, depth, F.transcriptBytes, plus(run[2], #message) }
for i = 1, 4 do
  writes[#writes + 1] = own[i]
  writes[#writes + 1] = plus(run[3 + i], added[i])
  writes[#writes + 1] = total[i]
  writes[#writes + 1] = plus(run[7 + i], added[i])
end
redis.call('HSET', runKey, unpack(writes))
for k = 5, #KEYS do
  local a, sums = ancestors[k], {}
  for i = 1, 4 do
    sums[#sums + 1] = total[i]
    sums[#sums + 1] = plus(a[1 + i], added[i])
  end
  redis.call('HSET', KEYS[k], unpack(sums))
end
xadd(eventsKey, 'step.completed', completedEvent)
return false
