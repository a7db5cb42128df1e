--[[
  Saves the next version of a tenant's agent and lists the agent in the tenant's index. The
  version is the one after the agent's latest (1 for a new agent). A definition whose digest is
  the latest version's is not saved again: the latest version stands.

  Input:
    KEYS[1] agentKey        the agent's hash: `latest`, `digest`, `current` (the latest record), `v:<n>`
    KEYS[2] indexKey        the tenant's agents (a sorted set, all scores 0, by name)
    ARGV[1] name
    ARGV[2] record          the version's record as JSON, without its version: an object, `{…}`
    ARGV[3] digest          the definition's digest
    ARGV[4] mode            'create': only if the agent does not exist; 'put': create or replace

  Output:
    { 1, version } saved; { 0, latest } not saved, the agent exists (create);
    { 2, latest } not saved, the definition is the latest's
]]
local agentKey, indexKey = KEYS[1], KEYS[2]
local name, record, digest, mode = ARGV[1], ARGV[2], ARGV[3], ARGV[4]

local held = redis.call('HMGET', agentKey, 'latest', 'digest')
local latest = tonumber(held[1]) or 0
if mode == 'create' and latest > 0 then return { 0, latest } end
if latest > 0 and held[2] == digest then return { 2, latest } end
local version = latest + 1
local stored = '{"version":' .. version .. ',' .. string.sub(record, 2)
redis.call('HSET', agentKey, 'latest', version, 'digest', digest, 'current', stored, 'v:' .. version, stored)
redis.call('ZADD', indexKey, 0, name)
return { 1, version }
