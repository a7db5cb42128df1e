-- runOver(status): true when a run is gone (its status read as false) or has ended.
local function runOver(status)
  return (not status) or C.statusIsTerminal
end
