--[[
  For a run that has ended: every request of its own still waiting is decided `cancelled` (an
  answer that won the race stands) and no longer waits on its ancestors.

  Input:
    KEYS[1..5], KEYS[6..]     as require-actions.lua
    ARGV[1] decision          the cancel's decision (JSON)
    ARGV[2] at                its time (ISO)
    ARGV[3] ancestorCount
    ARGV[4] isRoot            '1' when the run is its tree's root
    ARGV[5] runId

  Output:
    { the ids cancelled, the ancestors it moved back to running (i: the i-th) }
]]
local runKey, actionsKey, pendingKey, eventsKey, rootEventsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local decision, at, ancestorCount, isRoot, runId = ARGV[1], ARGV[2], tonumber(ARGV[3]), ARGV[4] == '1', ARGV[5]

--- @include "events"
--- @include "unpend"

local cancelled, resumed = {}, {}
for _, id in ipairs(redis.call('ZRANGE', pendingKey, 0, -1)) do
  if redis.call('HEXISTS', actionsKey, id) == 1 and redis.call('HSETNX', actionsKey, id .. A.decisionSuffix, decision) == 1 then
    cancelled[#cancelled + 1] = id
    redis.call('ZREM', pendingKey, id)
    for a = 0, ancestorCount - 1 do
      if unpend(id, KEYS[6 + 2 * a], KEYS[7 + 2 * a]) then resumed[#resumed + 1] = tostring(a + 1) end
    end
    if not isRoot then
      xadd(rootEventsKey, 'action.resolved', cjson.encode({ run_id = runId, id = id, decision = 'cancelled', at = at }))
    end
  end
end
return { cancelled, resumed }
