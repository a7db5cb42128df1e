--[[
  Creates a run's own keys on a Redis Cluster (they share its tree's slot; the pending mark and
  the index entry are written apart, first). Nothing is written if the run exists.

  Input:
    KEYS[1] runKey
    KEYS[2] messagesKey
    KEYS[3] eventsKey
    ARGV[1] queuedEvent    the `run.queued` event's data (JSON)
    ARGV[2] fieldCount     how many field and value arguments follow
    ARGV[3..2+fieldCount]  the run hash's fields and values
    ARGV[3+fieldCount..]   the first messages (JSON)

  Output:
    1 if created, 0 if a run with this id exists
]]
local runKey, messagesKey, eventsKey = KEYS[1], KEYS[2], KEYS[3]
local queuedEvent = ARGV[1]
local lastField = 2 + tonumber(ARGV[2])

--- @include "write-new-run"

if redis.call('EXISTS', runKey) == 1 then return 0 end
writeNewRun(runKey, messagesKey, eventsKey, queuedEvent, { unpack(ARGV, 3, lastField) },
  { unpack(ARGV, lastField + 1, #ARGV) })
return 1
