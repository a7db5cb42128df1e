-- xadd(key, type, data): appends an event to a run's stream and trims the stream to about
-- C.eventsMaxlen events; appendEvent(key, type, data) appends only (see EVENTS_MAXLEN in keys.ts).
local function xadd(key, type, data)
  return redis.call('XADD', key, 'MAXLEN', '~', C.eventsMaxlen, '*', 'type', type, 'data', data)
end
local function appendEvent(key, type, data)
  return redis.call('XADD', key, '*', 'type', type, 'data', data)
end
