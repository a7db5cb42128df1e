--- @include "run-over"
--- @include "plus"
-- appendRound(runKey, messagesKey, ancestorRunKeys, depth, messages): appends the tool messages
-- of the step at `depth` (JSON strings, in call order) once per depth, unless the run has ended;
-- counts them in the run's usage and every existing ancestor's usage_total, their bytes in the
-- transcript's size, and moves the run's depth on. Returns 1 if appended now; 0 if appended
-- before, if the run has ended, or if the step's assistant message is not in the transcript (a
-- failover lost its commit: replication is asynchronous), so that no tool message is orphaned.
local function appendRound(runKey, messagesKey, ancestorRunKeys, depth, messages)
  local marker = F.roundMarkerPrefix .. depth
  local run = redis.call('HMGET', runKey, F.status, F.transcriptBytes, F.stepMarkerPrefix .. depth, marker,
    U.tool_calls, UT.tool_calls)
  if runOver(run[1]) then return 0 end
  if not run[3] then return 0 end
  if run[4] then return 0 end
  local n = #messages
  if n > 0 then redis.call('RPUSH', messagesKey, unpack(messages)) end
  local bytes = 0
  for _, m in ipairs(messages) do bytes = bytes + #m end
  redis.call('HSET', runKey, marker, '1', U.tool_calls, plus(run[5], n),
    UT.tool_calls, plus(run[6], n), F.depth, plus(depth, 1),
    F.transcriptBytes, plus(run[2], bytes))
  for _, key in ipairs(ancestorRunKeys) do
    if redis.call('EXISTS', key) == 1 then redis.call('HINCRBY', key, UT.tool_calls, n) end
  end
  return 1
end
