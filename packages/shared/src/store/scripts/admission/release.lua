--[[
  A run ended: it holds no slot, waits for nothing, and leaves its line if it was still in it;
  then runs are admitted into the room (see includes/admission.lua).

  Input:
    KEYS[1..5] backlogKey, limitsKey, activeTotalKey, vclockKey, pendingKey
    KEYS[6] lineKey
    KEYS[7] activeKey
    KEYS[8] waitingKey     the tenant's runs waiting for an answer
    KEYS[9] parkedKey      the tenant's runs waiting on their sub-runs
    ARGV[1] tenant
    ARGV[2] runId
    ARGV[3] now            ms
    ARGV[4] linePrefix
    ARGV[5] activePrefix
    ARGV[6] most           runs admitted at most

  Output:
    the run ids admitted
]]
local backlogKey, limitsKey, activeTotalKey, vclockKey, pendingKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local lineKey, activeKey, waitingKey, parkedKey = KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local tenant, runId, now = ARGV[1], ARGV[2], ARGV[3]
local linePrefix, activePrefix, most = ARGV[4], ARGV[5], tonumber(ARGV[6])

--- @include "admission"

if redis.call('SREM', activeKey, runId) == 1 then redis.call('DECR', activeTotalKey) end
redis.call('SREM', waitingKey, runId)
redis.call('SREM', parkedKey, runId)
redis.call('ZREM', lineKey, runId)
backlogged(tenant, lineKey)
return admitFromLines(most)
