--[[
  Appends the round that asks the model to repair its answer (a final answer that failed the
  run's response_format) after the step at `depth`: one `user` message, once per depth, unless the
  run has ended or the step is not in the transcript; it moves the run's depth on, as a round of
  tool calls does, so that the next step is that depth's.

  Input:
    KEYS[1] runKey
    KEYS[2] messagesKey
    ARGV[1] depth
    ARGV[2] message         the `user` message (JSON)

  Output:
    1 if appended now or before; 0 if the run has ended or the step is not committed
]]
local runKey, messagesKey = KEYS[1], KEYS[2]
local depth, message = ARGV[1], ARGV[2]

--- @include "run-over"
--- @include "plus"

local marker = F.roundMarkerPrefix .. depth
local run = redis.call('HMGET', runKey, F.status, F.transcriptBytes, F.stepMarkerPrefix .. depth, marker)
if run[4] then return 1 end
if runOver(run[1]) or not run[3] then return 0 end
redis.call('RPUSH', messagesKey, message)
redis.call('HSET', runKey, marker, '1', F.depth, plus(depth, 1), F.transcriptBytes, plus(run[2], #message))
return 1
