--[[
  Stores a round's requests for an answer, each unless stored before (a step done again asks
  nothing twice); lists each as waiting on the run and every ancestor; moves those of them that
  are running to `requires_action`; appends `action.required` to the run's and the root's streams.

  Input:
    KEYS[1] runKey            the waiting run
    KEYS[2] actionsKey        its requests (a hash)
    KEYS[3] pendingKey        its waiting requests and its sub-runs' (a sorted set)
    KEYS[4] eventsKey
    KEYS[5] rootEventsKey
    KEYS[6..] per ancestor: its run key, its pending key
    ARGV[1] requiredEvent     the `action.required` event's data (JSON)
    ARGV[2] ancestorCount
    ARGV[3] isRoot            '1' when the run is its tree's root
    ARGV[4..] per request: its id, its record (JSON), its creation time (ms)

  Output:
    { how many requests are new (-1 if the run has ended), then the runs it moved to
    requires_action: 0 the run, i its i-th ancestor }
]]
local runKey, actionsKey, pendingKey, eventsKey, rootEventsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local requiredEvent, ancestorCount, isRoot = ARGV[1], tonumber(ARGV[2]), ARGV[3] == '1'

--- @include "run-over"
--- @include "events"

if runOver(redis.call('HGET', runKey, F.status)) then return { -1 } end
local made = 0
for i = 4, #ARGV, 3 do
  local id, record, createdMs = ARGV[i], ARGV[i + 1], ARGV[i + 2]
  if redis.call('HSETNX', actionsKey, id, record) == 1 then
    made = made + 1
    redis.call('ZADD', pendingKey, createdMs, id)
    for a = 0, ancestorCount - 1 do redis.call('ZADD', KEYS[7 + 2 * a], createdMs, id) end
  end
end
if made == 0 then return { 0 } end
local runs = { runKey }
for a = 0, ancestorCount - 1 do runs[#runs + 1] = KEYS[6 + 2 * a] end
local out = { made }
for i, key in ipairs(runs) do
  if redis.call('HGET', key, F.status) == 'running' then
    redis.call('HSET', key, F.status, 'requires_action')
    out[#out + 1] = i - 1
  end
end
xadd(eventsKey, 'action.required', requiredEvent)
if not isRoot then xadd(rootEventsKey, 'action.required', requiredEvent) end
return out
