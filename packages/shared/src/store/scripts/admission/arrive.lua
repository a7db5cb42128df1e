--[[
  A queued run (a root run or a sub-run) joins its tenant's line, once, unless the line is full;
  then runs are admitted while there is room (see includes/admission.lua). When no line holds a
  run, an arriving run with room is admitted without joining its line first: the same outcome in
  fewer writes.

  Input:
    KEYS[1] backlogKey
    KEYS[2] limitsKey
    KEYS[3] activeTotalKey
    KEYS[4] vclockKey
    KEYS[5] pendingKey
    KEYS[6] tenantsKey     every tenant that has had runs (for the reconciling sweep)
    KEYS[7] lineKey        the tenant's line
    KEYS[8] activeKey      the tenant's runs holding a slot
    ARGV[1] tenant
    ARGV[2] runId
    ARGV[3] now            ms
    ARGV[4] linePrefix
    ARGV[5] activePrefix
    ARGV[6] most           runs admitted at most
    ARGV[7] maxQueued      the most runs the tenant's line may hold

  Output:
    the run ids admitted (a run admitted before is returned again, for its first step to be
    enqueued), or { '!full' }
]]
local backlogKey, limitsKey, activeTotalKey, vclockKey, pendingKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local tenantsKey, lineKey, activeKey = KEYS[6], KEYS[7], KEYS[8]
local tenant, runId, now = ARGV[1], ARGV[2], ARGV[3]
local linePrefix, activePrefix, most, maxQueued = ARGV[4], ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7])

--- @include "admission"

redis.call('SADD', tenantsKey, tenant)
if redis.call('SISMEMBER', activeKey, runId) == 1 then return { runId } end
local queued = redis.call('ZCARD', lineKey)
if queued > 0 and redis.call('ZSCORE', lineKey, runId) then return admitFromLines(most) end
if queued >= maxQueued then return { '!full' } end
if queued == 0 and redis.call('ZCARD', backlogKey) == 0 then
  if underCapacity() and redis.call('SCARD', activeKey) < limits(tenant).max_active_runs then
    admit(runId, activeKey)
    return admitted
  end
end
redis.call('ZADD', lineKey, now, runId)
redis.call('ZADD', backlogKey, 'NX', clock(), tenant)
return admitFromLines(most)
