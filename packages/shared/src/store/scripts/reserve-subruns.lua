--[[
  Reserves room for a tool call's sub-runs in its run tree, once per call: a call done again
  (its job redelivered) finds its reservation and adds nothing; a reservation that would take the
  tree past its limit is refused and counts nothing.

  Input:
    KEYS[1] rootRunKey      the tree's root run (it keeps the tree's size)
    ARGV[1] callField       the reservation's field, named for the call
    ARGV[2] count           sub-runs the call starts
    ARGV[3] limit           the most runs the tree may hold (max_runs_per_tree)

  Output:
    { 1 if reserved (now or before) else 0, the tree's size with the call's sub-runs }
]]
local rootRunKey = KEYS[1]
local callField, count, limit = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])

local held = redis.call('HMGET', rootRunKey, F.treeRuns, callField)
-- The root counts as one run of its tree.
local size = 1 + (tonumber(held[1]) or 0)
if held[2] then return { 1, size } end
if size + count > limit then return { 0, size + count } end
redis.call('HSET', rootRunKey, F.treeRuns, size - 1 + count, callField, count)
return { 1, size + count }
