--[[
  ojsNowMs() -> Redis TIME in epoch ms: the one clock of every script (a job's OJS created_at, the
  period checks, the replay grace), whatever the producers' clocks say. (unique-add, which also
  needs the µs of the same instant for the index's insertion order, reads TIME itself.)
]]
local function ojsNowMs()
  local time = redis.call("TIME")
  return tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
end
