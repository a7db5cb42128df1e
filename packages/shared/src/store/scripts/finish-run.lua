--[[
  Ends a run once: its status, stop reason, output and error, its terminal event, and the expiry
  of all its keys.

  Input:
    KEYS[1] runKey
    KEYS[2] eventsKey
    KEYS[3..] every other key of the run, to expire with it
    ARGV[1] retentionSeconds
    ARGV[2] eventType      `run.<status>`
    ARGV[3] status
    ARGV[4] stopReason
    ARGV[5] completedAt    ISO time
    ARGV[6] output         JSON, or ''
    ARGV[7] outputParsed   JSON, or ''
    ARGV[8] error          JSON, or ''
    ARGV[9] eventData      the terminal event's data (JSON)

  Output:
    the status the run ended from, or 0 if it had ended (or was gone) already
]]
local runKey, eventsKey = KEYS[1], KEYS[2]
local retentionSeconds, eventType, status, stopReason = ARGV[1], ARGV[2], ARGV[3], ARGV[4]
local completedAt, output, outputParsed, err, eventData = ARGV[5], ARGV[6], ARGV[7], ARGV[8], ARGV[9]

--- @include "run-over"
--- @include "events"

local was = redis.call('HGET', runKey, F.status)
if runOver(was) then return 0 end
redis.call('HSET', runKey, F.status, status, F.stopReason, stopReason, F.completedAt, completedAt,
  F.output, output, F.outputParsed, outputParsed, F.error, err)
if redis.call('HEXISTS', runKey, F.startedAt) == 0 then redis.call('HSET', runKey, F.startedAt, completedAt) end
xadd(eventsKey, eventType, eventData)
for k = 1, #KEYS do redis.call('EXPIRE', KEYS[k], retentionSeconds) end
return was
