--[[
  The sidecar layout check, run first by every script that reads or writes the sidecar.

  A namespace of the sidecar (a queue's `<base>ojs:`, the prefix's `<prefix>ojs:global:`) records
  the layout version it is written in under its `ojs:layout` key, in its own hash slot
  (bullmq-sidecar-keys.ts, SIDECAR_LAYOUT_VERSION). A process of another layout would misread
  the index and add duplicates blind, so it is refused before the script reads anything else.

  The caller passes the check as the script's LAST arguments, after the script's own:
    …, version, layoutKey1, …, layoutKeyN, N
  (at the end, so that no script's own ARGV numbering moves).

  ojsLayoutCheck(ARGV) -> refusal, missing
    refusal: nil, or the error reply to return, naming both versions:
      "OJSLAYOUT " .. JSON { key, stored, ours }   (bullmq-errors.ts, layoutErrorFor)
    missing: the layout keys not set yet, for ojsLayoutRecord
  ojsLayoutRecord(missing)  SET each to this version
    Called by a script that inserted (created, replaced, updated; cancelled; a flow done), after
    its writes: a refused script writes nothing, the layout key included. A namespace is only
    ever written with its layout key set by the same script, so one without it holds no index
    entry: a script that only writes where entries already are (release, obliteration, a
    duplicate's answer) finds the key set. Scripts are atomic, so two processes of two layouts
    cannot both find a namespace empty and both write it.
  Costs one GET per namespace (two for the backend's adds with an id, whose claim spans its
  queues), a SET the first time.
]]
local function ojsLayoutCheck(ARGV)
  local count = tonumber(ARGV[#ARGV])
  local first = #ARGV - count
  local version = ARGV[first - 1]
  local missing = { version = version }
  for i = first, #ARGV - 1 do
    local stored = rcall("GET", ARGV[i])
    if not stored then
      missing[#missing + 1] = ARGV[i]
    elseif stored ~= version then
      return redis.error_reply("OJSLAYOUT " .. cjson.encode({ key = ARGV[i], stored = stored, ours = version })), missing
    end
  end
  return nil, missing
end

local function ojsLayoutRecord(missing)
  for _, key in ipairs(missing) do rcall("SET", key, missing.version) end
end
