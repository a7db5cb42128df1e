--[[
  Admits what there is room for (after limits changed, or from a sweep); see
  includes/admission.lua.

  Input:
    KEYS[1..5] backlogKey, limitsKey, activeTotalKey, vclockKey, pendingKey
    ARGV[1] now            ms
    ARGV[2] linePrefix
    ARGV[3] activePrefix
    ARGV[4] most           runs admitted at most

  Output:
    the run ids admitted
]]
local backlogKey, limitsKey, activeTotalKey, vclockKey, pendingKey = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local now, linePrefix, activePrefix, most = ARGV[1], ARGV[2], ARGV[3], tonumber(ARGV[4])

--- @include "admission"

return admitFromLines(most)
