--[[
  ojsPeriodEnd(createdMs, years, months, fixedMs) -> epoch ms at which the §7 window closes

  The Lua twin of the core's `addPeriod` (src/period.ts): the calendar part (years, months) is
  added on the UTC calendar, clamping the day to the target month's length (31 January + P1M =
  28/29 February, 29 February + P1Y = 28 February), then the fixed part (weeks, days, hours,
  minutes, seconds, already in ms) is added. Day/civil conversions are Howard Hinnant's
  days_from_civil / civil_from_days. test/adapters/bullmq-lua-decision.test.ts checks this
  against the core on random dates.
]]
local function ojsDaysFromCivil(y, m, d)
  if m <= 2 then y = y - 1 end
  local era = math.floor(y / 400)
  local yoe = y - era * 400
  local mp = (m > 2) and (m - 3) or (m + 9)
  local doy = math.floor((153 * mp + 2) / 5) + d - 1
  local doe = yoe * 365 + math.floor(yoe / 4) - math.floor(yoe / 100) + doy
  return era * 146097 + doe - 719468
end

local function ojsCivilFromDays(days)
  local z = days + 719468
  local era = math.floor(z / 146097)
  local doe = z - era * 146097
  local yoe = math.floor((doe - math.floor(doe / 1460) + math.floor(doe / 36524) - math.floor(doe / 146096)) / 365)
  local y = yoe + era * 400
  local doy = doe - (365 * yoe + math.floor(yoe / 4) - math.floor(yoe / 100))
  local mp = math.floor((5 * doy + 2) / 153)
  local d = doy - math.floor((153 * mp + 2) / 5) + 1
  local m = (mp < 10) and (mp + 3) or (mp - 9)
  if m <= 2 then y = y + 1 end
  return y, m, d
end

local function ojsPeriodEnd(createdMs, years, months, fixedMs)
  if years == 0 and months == 0 then return createdMs + fixedMs end
  local days = math.floor(createdMs / 86400000)
  local msOfDay = createdMs - days * 86400000
  local y, m, d = ojsCivilFromDays(days)
  local total = y * 12 + (m - 1) + years * 12 + months
  local y2 = math.floor(total / 12)
  local m2 = total - y2 * 12 + 1
  local monthDays = { 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31 }
  local dim = monthDays[m2]
  if m2 == 2 and ((y2 % 4 == 0 and y2 % 100 ~= 0) or y2 % 400 == 0) then dim = 29 end
  if d > dim then d = dim end
  return ojsDaysFromCivil(y2, m2, d) * 86400000 + msOfDay + fixedMs
end
