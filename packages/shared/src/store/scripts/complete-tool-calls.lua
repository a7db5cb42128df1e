--[[
  Stores results of one step's tool calls, each unless one is stored, and only then appends its
  `tool.completed` event (untrimmed: the next step's commit trims the stream), one call after
  another as if each came alone. When every call of the round has a result, the round's `tool`
  messages are appended to the transcript in call order (appendRound): the round is complete, and
  the caller that learns so enqueues the next step. A message waits in the hash (`<index>:msg`)
  only while its round is incomplete.

  Input:
    KEYS[1] toolCallsKey      the step's tool-call hash
    KEYS[2] eventsKey
    KEYS[3] runKey
    KEYS[4] messagesKey
    KEYS[5..] ancestorRunKeys
    ARGV[1] callCount         n
    ARGV[2] depth             the step's
    ARGV[3] roundSize         how many calls the step made
    ARGV[4..3+4n] per call: its index, its result (JSON), its `tool.completed` event data (JSON),
                  its `tool` message (JSON)

  Output:
    { each call's stored result (this one, or the one stored before), 1 if the round's messages
    were appended now else 0 }
]]
local toolCallsKey, eventsKey, runKey, messagesKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local callCount, depth, roundSize = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3])

--- @include "events"
--- @include "append-round"

local out = {}
-- Every call's stored result in one read, the new ones written in one HSET.
local indexes = {}
for c = 0, callCount - 1 do indexes[c + 1] = ARGV[4 + 4 * c] end
local stored = redis.call('HMGET', toolCallsKey, unpack(indexes))
local writes, resultNow, messageNow, anyNow = {}, {}, {}, false
for c = 0, callCount - 1 do
  local index, result, event, message = ARGV[4 + 4 * c], ARGV[5 + 4 * c], ARGV[6 + 4 * c], ARGV[7 + 4 * c]
  -- A call stored twice in one batch keeps its first result, as one after another would.
  local earlier = stored[c + 1] or resultNow[index]
  if earlier then
    out[#out + 1] = earlier
  else
    resultNow[index] = result
    messageNow[index] = message
    anyNow = true
    writes[#writes + 1] = index
    writes[#writes + 1] = result
    appendEvent(eventsKey, 'tool.completed', event)
    out[#out + 1] = result
  end
end
if #writes > 0 then redis.call('HSET', toolCallsKey, unpack(writes)) end
if not anyNow then
  out[#out + 1] = 0
  return out
end

-- The round's messages: those stored now from ARGV, the others kept by the calls stored before.
local messages, earlierIndexes, earlierFields = {}, {}, {}
for i = 0, roundSize - 1 do
  local index = tostring(i)
  if messageNow[index] then
    messages[i + 1] = messageNow[index]
  else
    earlierIndexes[#earlierIndexes + 1] = index
    earlierFields[#earlierFields + 1] = index .. T.messageSuffix
  end
end
local complete = true
if #earlierFields > 0 then
  local kept = redis.call('HMGET', toolCallsKey, unpack(earlierFields))
  for j, index in ipairs(earlierIndexes) do
    if kept[j] then messages[tonumber(index) + 1] = kept[j] else complete = false end
  end
end
if not complete then
  -- A call of the round has no result yet: keep these messages for the call that completes it.
  local keep = {}
  for index, message in pairs(messageNow) do
    keep[#keep + 1] = index .. T.messageSuffix
    keep[#keep + 1] = message
  end
  redis.call('HSET', toolCallsKey, unpack(keep))
  out[#out + 1] = 0
  return out
end
local ancestorRunKeys = {}
for k = 5, #KEYS do ancestorRunKeys[#ancestorRunKeys + 1] = KEYS[k] end
local appended = appendRound(runKey, messagesKey, ancestorRunKeys, depth, messages)
if appended == 1 and #earlierFields > 0 then redis.call('HDEL', toolCallsKey, unpack(earlierFields)) end
out[#out + 1] = appended
return out
