--[[
  unique-find: the job holding a uniqueness key (findUniqueJob), read atomically.

  Input:
    KEYS[1]  the index hash the key's jobs are listed in (as unique-add's KEYS[12])

    ARGV[1]  root key prefix with its colon ("bull:")
    ARGV[2]  uniqueness key (§4)
    ARGV[3]  policy states, comma-separated OJS states (a lookup by key alone: the live states)
    ARGV[4]  period years, "" when the policy has no period
    ARGV[5]  period months
    ARGV[6]  period fixed part in ms
    ARGV[7]  the terminal states the policy counts, as index bits (as unique-add's ARGV[17])
    ARGV[8]  the index's home queue (as unique-add's ARGV[18])
    ARGV[last]  the layout check, after the script's own arguments (includes/ojs-layout): the index's namespace

  Steps:
    1. now = Redis TIME (the clock unique-add decides with).
    2. Observe the key's jobs (includes/ojs-observe) and take the one an `ignore` add of this
       policy would meet as its duplicate (includes/ojs-decide-conflict): the oldest counted.

  Output:
    { "found", id, ojsState, queue, nowMs, hash }  the job (its archive's hash when cancelled)
    { "none" }

  Reads only: the entries observing would drop or widen are left for the next add to write.
]]
local rcall = redis.call

--- @bullmq-host

--- @include "includes/ojs-now"
--- @include "includes/ojs-job-state"
--- @include "includes/ojs-own-policy"
--- @include "includes/ojs-period-end"
--- @include "includes/ojs-decide-conflict"
--- @include "includes/ojs-read-job"
--- @include "includes/ojs-read-policy"
--- @include "includes/ojs-index"
--- @include "includes/ojs-observe"
--- @include "includes/ojs-layout"

local layoutRefusal = ojsLayoutCheck(ARGV)
if layoutRefusal then return layoutRefusal end

local nowMs = ojsNowMs()
local uniquenessKey = ARGV[2]
local policy = ojsReadPolicy("ignore", ARGV[3], ARGV[4], ARGV[5], ARGV[6])
local entries = ojsIndexRead(KEYS[1], string.sub(uniquenessKey, 1, 32), ARGV[8], ARGV[1])
local candidates = ojsObserve(entries, uniquenessKey, policy, tonumber(ARGV[7]), nowMs, "")
local action, existing = ojsDecideConflict(candidates, policy, nowMs)
if action == "insert" then return { "none" } end
return { "found", existing.id, existing.state, existing.queue, nowMs, ojsReadJob(existing.base, existing.id, existing.location) }
