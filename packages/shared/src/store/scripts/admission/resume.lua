--[[
  A run waits no more for this reason: unless it still waits for the other one, it takes its slot
  back at once, whatever its tenant's limit (an accepted run always runs; the tenant admits no new
  run until it is under its limit again).

  Input:
    KEYS[1] activeTotalKey
    KEYS[2] activeKey
    KEYS[3] reasonKey        the tenant's runs waiting for this reason
    KEYS[4] otherReasonKey   the tenant's runs waiting for the other reason
    ARGV[1] runId

  Output:
    1 if the run holds a slot again, else 0
]]
local activeTotalKey, activeKey, reasonKey, otherReasonKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local runId = ARGV[1]

if redis.call('SREM', reasonKey, runId) == 0 then return 0 end
if redis.call('SISMEMBER', otherReasonKey, runId) == 1 then return 0 end
if redis.call('SADD', activeKey, runId) == 0 then return 0 end
redis.call('INCR', activeTotalKey)
return 1
