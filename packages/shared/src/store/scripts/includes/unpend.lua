-- unpend(id, runKey, pendingKey): the request no longer waits in this run's view; a run left with
-- nothing waiting goes from `requires_action` back to `running` (then it returns true).
local function unpend(id, runKey, pendingKey)
  redis.call('ZREM', pendingKey, id)
  if redis.call('ZCARD', pendingKey) == 0 and redis.call('HGET', runKey, F.status) == 'requires_action' then
    redis.call('HSET', runKey, F.status, 'running')
    return true
  end
  return false
end
