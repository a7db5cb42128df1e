--- @include "events"
-- writeNewRun(runKey, messagesKey, eventsKey, queuedEvent, fields, messages): a new run's hash
-- (a flat list of fields and values), first messages and `run.queued` event. Its callers write it
-- only if the run does not exist: two writers of one sub-run write it once.
local function writeNewRun(runKey, messagesKey, eventsKey, queuedEvent, fields, messages)
  redis.call('HSET', runKey, unpack(fields))
  for i = 1, #messages, 1000 do
    redis.call('RPUSH', messagesKey, unpack(messages, i, math.min(i + 999, #messages)))
  end
  appendEvent(eventsKey, 'run.queued', queuedEvent)
end
