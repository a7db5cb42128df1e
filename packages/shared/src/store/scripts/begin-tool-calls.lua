--[[
  Begins tool calls of one step in one round trip, each exactly as if begun alone, one after
  another; the run and its ancestors are read once. A call whose result is stored is 'done'
  whatever the run's state. Otherwise, while the run and its ancestors go on, the call is marked
  running and `tool.started` appended (untrimmed: the next step's commit trims the stream).

  Input:
    KEYS[1] toolCallsKey      the step's tool-call hash
    KEYS[2] runKey
    KEYS[3] eventsKey
    KEYS[4..] ancestorRunKeys
    ARGV[1] callCount         n
    ARGV[2..1+3n] per call: its index, its running marker (JSON), its `tool.started` event data
                  (JSON; '' for none)
    ARGV[2+3n..] the run fields to read, its status first

  Output:
    { state, the run fields read…, then per call { outcome, value } }: state is 'ended' if the run
    is gone or over, 'ancestor_over' if an ancestor is, else 'begun'; a call is { 'done', stored
    result }, { 'begun', the marker of an earlier attempt or false }, or { state } (nothing written)
]]
local toolCallsKey, runKey, eventsKey = KEYS[1], KEYS[2], KEYS[3]
local callCount = tonumber(ARGV[1])

--- @include "run-over"
--- @include "events"

local fields = {}
for i = 2 + 3 * callCount, #ARGV do fields[#fields + 1] = ARGV[i] end
local run = redis.call('HMGET', runKey, unpack(fields))
local state = 'begun'
if runOver(run[1]) then
  state = 'ended'
else
  for k = 4, #KEYS do
    if runOver(redis.call('HGET', KEYS[k], F.status)) then
      state = 'ancestor_over'
      break
    end
  end
end
local out = { state }
for i = 1, #run do out[#out + 1] = run[i] end

-- Every call's result and running marker in one read, every marker written in one HSET.
local callFields = {}
for c = 0, callCount - 1 do
  local index = ARGV[2 + 3 * c]
  callFields[2 * c + 1] = index
  callFields[2 * c + 2] = index .. T.runningSuffix
end
local calls = redis.call('HMGET', toolCallsKey, unpack(callFields))
local markers, begunNow = {}, {}
for c = 0, callCount - 1 do
  local index, marker, event = ARGV[2 + 3 * c], ARGV[3 + 3 * c], ARGV[4 + 3 * c]
  local stored = calls[2 * c + 1]
  if stored then
    out[#out + 1] = { 'done', stored }
  elseif state ~= 'begun' then
    out[#out + 1] = { state }
  else
    -- A call begun twice in one batch sees its first begin's marker, as one after another would.
    out[#out + 1] = { 'begun', begunNow[index] or calls[2 * c + 2] }
    begunNow[index] = marker
    markers[#markers + 1] = callFields[2 * c + 2]
    markers[#markers + 1] = marker
    if event ~= '' then appendEvent(eventsKey, 'tool.started', event) end
  end
end
if #markers > 0 then redis.call('HSET', toolCallsKey, unpack(markers)) end
return out
