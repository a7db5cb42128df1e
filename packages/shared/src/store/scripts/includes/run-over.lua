-- runOver(status): true when a run is gone (its status read as false) or has ended.
local terminalStatuses = { C.terminalStatuses }
local function runOver(status)
  if not status then return true end
  for _, s in ipairs(terminalStatuses) do
    if status == s then return true end
  end
  return false
end
