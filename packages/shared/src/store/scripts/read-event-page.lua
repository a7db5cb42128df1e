--[[
  Reads up to `count` events of a run's stream after `start`, stopping before the first that
  would take the page past `maxBytes` (an entry's size: its fields' names and values). Entries
  are read one at a time: an entry is copied into Lua to be measured, and those past the one that
  does not fit (each possibly a model's whole answer) are not.

  Input:
    KEYS[1] eventsKey
    ARGV[1] start          '-' or '(<id>'
    ARGV[2] count
    ARGV[3] maxBytes

  Output:
    { page, the id of the event it stopped before, that event's size } ('' and 0 when it did not
    stop for size)
]]
local eventsKey = KEYS[1]
local start, count, maxBytes = ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3])

local page = {}
local bytes = 0
while #page < count do
  local row = redis.call('XRANGE', eventsKey, start, '+', 'COUNT', 1)[1]
  if not row then break end
  local size = 0
  for j = 1, #row[2] do size = size + #row[2][j] end
  if bytes + size > maxBytes then return { page, row[1], size } end
  bytes = bytes + size
  page[#page + 1] = row
  start = '(' .. row[1]
end
return { page, '', 0 }
