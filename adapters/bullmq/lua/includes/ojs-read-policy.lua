--[[
  ojsReadPolicy(onConflict, states, years, months, fixedMs, anchor, update) -> policy

  The policy as the scripts receive it (strings in ARGV) as the table ojsDecideConflict reads:
  { states = set of OJS states, onConflict, years, months, fixedMs, anchor, update, maxWait } — no
  period when `years` is ""; anchor "" = created_at; update: "" = no x_update, else JSON
  { state: [field, …] } with the fields in the core's UPDATE_FIELDS order, and for x_max_wait
  also "~maxWait": [years, months, fixedMs] (no state is spelt with "~"), read into maxWait; for
  x_successor "~successor": its mode, read into successor (the JSON then holds no state when the
  policy has no x_update: update stays nil).
  Shared by unique-add and unique-probe so both decide on the same policy.
]]
local function ojsReadPolicy(onConflict, states, years, months, fixedMs, anchor, update)
  local policy = { states = {}, onConflict = onConflict, anchor = anchor or "" }
  if update ~= nil and update ~= "" then
    policy.update = cjson.decode(update)
    policy.maxWait = policy.update["~maxWait"]
    policy.update["~maxWait"] = nil
    policy.successor = policy.update["~successor"]
    policy.update["~successor"] = nil
    if next(policy.update) == nil then policy.update = nil end
  end
  for state in string.gmatch(states, "[^,]+") do policy.states[state] = true end
  if years ~= "" then
    policy.years = tonumber(years)
    policy.months = tonumber(months)
    policy.fixedMs = tonumber(fixedMs)
  end
  return policy
end
