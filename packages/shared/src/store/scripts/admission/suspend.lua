--[[
  An admitted run begins to wait (for an answer, or on its sub-runs): it is marked waiting for
  that reason and, if it held a slot, gives it up; then runs are admitted into the room (see
  includes/admission.lua). A run that waits holds no slot, so a tree cannot deadlock its tenant.

  Input:
    KEYS[1..5] backlogKey, limitsKey, activeTotalKey, vclockKey, pendingKey
    KEYS[6] lineKey
    KEYS[7] activeKey
    KEYS[8] reasonKey        the tenant's runs waiting for this reason
    KEYS[9] otherReasonKey   the tenant's runs waiting for the other reason
    ARGV[1] tenant
    ARGV[2] runId
    ARGV[3] now              ms
    ARGV[4] linePrefix
    ARGV[5] activePrefix
    ARGV[6] most             runs admitted at most

  Output:
    the run ids admitted
]]
local backlogKey, limitsKey, activeTotalKey, vclockKey, pendingKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local lineKey, activeKey, reasonKey, otherReasonKey = KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local tenant, runId, now = ARGV[1], ARGV[2], ARGV[3]
local linePrefix, activePrefix, most = ARGV[4], ARGV[5], tonumber(ARGV[6])

--- @include "admission"

local wasActive = redis.call('SREM', activeKey, runId) == 1
-- Only an admitted run waits: one neither holding a slot nor waiting already has ended.
if wasActive or redis.call('SISMEMBER', otherReasonKey, runId) == 1 then redis.call('SADD', reasonKey, runId) end
if not wasActive then return admitted end
redis.call('DECR', activeTotalKey)
backlogged(tenant, lineKey)
return admitFromLines(most)
