--[[
  Moves a queued run to running, with its `run.started` event (appended untrimmed).

  Input:
    KEYS[1] runKey
    KEYS[2] eventsKey
    ARGV[1] startedAt      ISO time
    ARGV[2] startedEvent   the event's data (JSON)

  Output:
    the event's id, or false if the run was not queued
]]
local runKey, eventsKey = KEYS[1], KEYS[2]
local startedAt, startedEvent = ARGV[1], ARGV[2]

--- @include "events"

if redis.call('HGET', runKey, F.status) ~= 'queued' then return false end
redis.call('HSET', runKey, F.status, 'running', F.startedAt, startedAt)
return appendEvent(eventsKey, 'run.started', startedEvent)
