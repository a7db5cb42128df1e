--[[
  Takes one call from a provider's token bucket: `max` tokens, refilled at `max` per `windowMs`
  (so at most `max` calls at once after a quiet spell, and `max` per window on average). The time
  is Redis's, the same for every agent-worker.

  Input:
    KEYS[1] bucketKey       the provider's bucket (a hash: tokens, at)
    ARGV[1] max
    ARGV[2] windowMs

  Output:
    0 when a token was taken; else the milliseconds until one will be there
]]
local bucketKey = KEYS[1]
local max, windowMs = tonumber(ARGV[1]), tonumber(ARGV[2])

local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local held = redis.call('HMGET', bucketKey, 'tokens', 'at')
local tokens = tonumber(held[1]) or max
local at = tonumber(held[2]) or now
if now > at then tokens = math.min(max, tokens + (now - at) * max / windowMs) end
local wait = 0
if tokens >= 1 then
  tokens = tokens - 1
else
  wait = math.ceil((1 - tokens) * windowMs / max)
end
redis.call('HSET', bucketKey, 'tokens', tostring(tokens), 'at', now)
redis.call('PEXPIRE', bucketKey, windowMs * 2)
return wait
