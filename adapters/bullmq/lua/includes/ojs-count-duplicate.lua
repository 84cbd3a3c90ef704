--[[
  ojsCountDuplicate(hashKey, request, nowMs, hash, known) -> hash

  Duplicate counts (docs/decisions.md, "Duplicate counts"): the job an add met and left holding
  its key (ignore, reject, an update, a replace refused by an active job) counts the add in one
  field of its own hash, beside the fields the job view reads:
    ojsDup  "<count>,<ms>,<request>": how many adds were counted, when the last one was (Redis
            TIME), and its request token: the same add written again by ioredis after a lost
            reply finds its token there and is not counted again (bullmq-job-view.ts parses it)
  hash: the job's hash already read by the caller (HGETALL, flat, as ojsReadJob returns it),
  patched in place so that the reply carries the count. known: the field as the caller's reads
  found it (the existing job's `dup`: includes/ojs-observe, ojs-native-holder; false for none);
  with neither, one HGET. So one HSET beside the reads the decision makes anyway.
]]
local function ojsCountDuplicate(hashKey, request, nowMs, hash, known)
  local stored, at
  if hash ~= nil then
    for i = 1, #hash, 2 do
      if hash[i] == "ojsDup" then
        at = i + 1
        stored = hash[at]
        break
      end
    end
  elseif known ~= nil then
    stored = known
  else
    stored = rcall("HGET", hashKey, "ojsDup")
  end
  local count = 0
  if stored then
    local comma = string.find(stored, ",", 1, true)
    -- The same add again: its token is the last one counted.
    if request ~= "" and string.sub(stored, string.find(stored, ",", comma + 1, true) + 1) == request then return hash end
    count = tonumber(string.sub(stored, 1, comma - 1))
  end
  local value = (count + 1) .. "," .. nowMs .. "," .. request
  rcall("HSET", hashKey, "ojsDup", value)
  if hash ~= nil then
    if at then
      hash[at] = value
    else
      hash[#hash + 1] = "ojsDup"
      hash[#hash + 1] = value
    end
  end
  return hash
end
