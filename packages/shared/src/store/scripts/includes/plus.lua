-- plus(stored, n): a counter as stored (a string, or false when unset) plus the number n, as the
-- decimal string HSET writes. A counter read, summed and written in one HSET with a script's other
-- writes costs Redis less than an HINCRBY of its own. '%d': a Lua number handed to Redis as it is
-- would be written as a float.
local function plus(stored, n)
  return string.format('%d', (tonumber(stored) or 0) + n)
end
