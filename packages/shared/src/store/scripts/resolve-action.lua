--[[
  Stores the decision on a request unless it has one: the first of answer, expiry and cancel
  wins, whichever process makes it. The request stops waiting on the run and its ancestors (a run
  left with nothing waiting is `running` again), and `action.resolved` is appended to the run's
  and the root's streams.

  Input:
    KEYS[1..5], KEYS[6..]     as require-actions.lua
    ARGV[1] actionId
    ARGV[2] decision          JSON
    ARGV[3] resolvedEvent     the `action.resolved` event's data (JSON)
    ARGV[4] ancestorCount
    ARGV[5] isRoot            '1' when the run is its tree's root

  Output:
    { 'ok', the runs it moved back to running (0 the run, i its i-th ancestor)… }, { 'missing' },
    { 'ended' } (the run is over) or { 'resolved', the decision stored before }
]]
local runKey, actionsKey, pendingKey, eventsKey, rootEventsKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local actionId, decision, resolvedEvent = ARGV[1], ARGV[2], ARGV[3]
local ancestorCount, isRoot = tonumber(ARGV[4]), ARGV[5] == '1'

--- @include "run-over"
--- @include "events"
--- @include "unpend"

if redis.call('HEXISTS', actionsKey, actionId) == 0 then return { 'missing' } end
local decisionField = actionId .. A.decisionSuffix
local prev = redis.call('HGET', actionsKey, decisionField)
if prev then return { 'resolved', prev } end
if runOver(redis.call('HGET', runKey, F.status)) then return { 'ended' } end
redis.call('HSET', actionsKey, decisionField, decision)
local out = { 'ok' }
if unpend(actionId, runKey, pendingKey) then out[#out + 1] = '0' end
for a = 0, ancestorCount - 1 do
  if unpend(actionId, KEYS[6 + 2 * a], KEYS[7 + 2 * a]) then out[#out + 1] = tostring(a + 1) end
end
xadd(eventsKey, 'action.resolved', resolvedEvent)
if not isRoot then xadd(rootEventsKey, 'action.resolved', resolvedEvent) end
return out
