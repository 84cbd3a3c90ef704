--[[
  ojsReadPolicy(onConflict, states, years, months, fixedMs) -> policy

  The policy as the scripts receive it (strings in ARGV) as the table ojsDecideConflict reads:
  { states = set of OJS states, onConflict, years, months, fixedMs } — no period when `years`
  is "". Shared by unique-add and unique-probe so both decide on the same policy.
]]
local function ojsReadPolicy(onConflict, states, years, months, fixedMs)
  local policy = { states = {}, onConflict = onConflict }
  for state in string.gmatch(states, "[^,]+") do policy.states[state] = true end
  if years ~= "" then
    policy.years = tonumber(years)
    policy.months = tonumber(months)
    policy.fixedMs = tonumber(fixedMs)
  end
  return policy
end
