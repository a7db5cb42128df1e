--[[
  Creates a run on one Redis (nothing is written if it exists): marks it pending, lists it in its
  tenant's index (trimming ids of long-expired runs), writes its hash, first messages and
  `run.queued` event.

  Input:
    KEYS[1] pendingKey     runs whose first step may not be enqueued yet (a sorted set)
    KEYS[2] indexKey       the tenant's run index (a sorted set, by id)
    KEYS[3] runKey
    KEYS[4] messagesKey
    KEYS[5] eventsKey
    ARGV[1] runId
    ARGV[2] createdMs
    ARGV[3] trimBelow      the index's lower bound to keep ('' for none)
    ARGV[4] queuedEvent    the `run.queued` event's data (JSON)
    ARGV[5] fieldCount     how many field and value arguments follow
    ARGV[6..5+fieldCount]  the run hash's fields and values
    ARGV[6+fieldCount..]   the first messages (JSON)

  Output:
    1 if created, 0 if a run with this id exists
]]
local pendingKey, indexKey, runKey, messagesKey, eventsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local runId, createdMs, trimBelow, queuedEvent = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local lastField = 5 + tonumber(ARGV[5])

--- @include "write-new-run"

if redis.call('EXISTS', runKey) == 1 then return 0 end
redis.call('ZADD', pendingKey, createdMs, runId)
redis.call('ZADD', indexKey, 0, runId)
if trimBelow ~= '' then redis.call('ZREMRANGEBYLEX', indexKey, '-', trimBelow) end
writeNewRun(runKey, messagesKey, eventsKey, queuedEvent, { unpack(ARGV, 6, lastField) },
  { unpack(ARGV, lastField + 1, #ARGV) })
return 1
