-- Fair admission of runs from their tenants' lines (see runs/admission.ts). Expects the script
-- to have bound these locals first: backlogKey (tenants with runs in their line, by virtual
-- time), limitsKey (each tenant's limits as published), activeTotalKey (runs holding a slot, all
-- tenants), vclockKey (the virtual clock), pendingKey (runs whose first step may not be enqueued
-- yet), linePrefix, activePrefix, now. Admitted run ids are appended to `admitted`.
local admitted = {}
local startClock, vclock, capacity

local function clock()
  if not startClock then
    startClock = tonumber(redis.call('GET', vclockKey) or '0')
    vclock = startClock
  end
  return vclock
end

-- A tenant's limits (its own, else the default) in one read, with the total capacity.
local function limits(tenant)
  local raw = redis.call('HMGET', limitsKey, tenant, '*', '#total')
  capacity = capacity or tonumber(raw[3] or '0')
  local own = raw[1] or raw[2]
  if own then return cjson.decode(own) end
  return { max_active_runs = 100, weight = 1 }
end

local function underCapacity()
  capacity = capacity or tonumber(redis.call('HGET', limitsKey, '#total') or '0')
  return capacity == 0 or tonumber(redis.call('GET', activeTotalKey) or '0') < capacity
end

-- The run holds a slot of its tenant and is pending until its first step is enqueued.
local function admit(runId, activeKey)
  redis.call('SADD', activeKey, runId)
  redis.call('INCR', activeTotalKey)
  redis.call('ZADD', pendingKey, now, runId)
  admitted[#admitted + 1] = runId
end

-- A tenant whose line holds runs is in the backlog (at the current virtual time if it was not).
local function backlogged(tenant, lineKey)
  if redis.call('ZCARD', lineKey) > 0 then redis.call('ZADD', backlogKey, 'NX', clock(), tenant) end
end

-- While there is room, admits runs from the lines, fairly: the tenant with the smallest virtual
-- time goes first and moves on by 1/weight per run (start-time fair queueing); a tenant at its
-- max_active_runs leaves the backlog until a run of it ends; all tenants together stop at the
-- total capacity if one is set.
local function admitFromLines(most)
  for _ = 1, most do
    if not underCapacity() then break end
    local head = redis.call('ZRANGE', backlogKey, 0, 0, 'WITHSCORES')
    if #head == 0 then break end
    local tenant, score = head[1], tonumber(head[2])
    local lim = limits(tenant)
    local activeKey, lineKey = activePrefix .. tenant, linePrefix .. tenant
    if redis.call('SCARD', activeKey) >= lim.max_active_runs then
      redis.call('ZREM', backlogKey, tenant)
    else
      local runId = redis.call('ZPOPMIN', lineKey)[1]
      if not runId then
        redis.call('ZREM', backlogKey, tenant)
      else
        admit(runId, activeKey)
        clock()
        vclock = score
        if redis.call('ZCARD', lineKey) > 0 then
          redis.call('ZADD', backlogKey, score + 1 / lim.weight, tenant)
        else
          redis.call('ZREM', backlogKey, tenant)
        end
      end
    end
  end
  -- The virtual time is written only when it moved.
  if startClock and vclock ~= startClock then redis.call('SET', vclockKey, vclock) end
  return admitted
end
