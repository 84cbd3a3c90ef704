--[[
  unique-add: the OJS unique-jobs check and BullMQ's own add, in one script.

  BullMQ's add scripts (addStandardJob-9, addDelayedJob-6, addPrioritizedJob-9) are NOT copied:
  the adapter takes them from the installed bullmq at start-up and splices each in where a
  `--- @bullmq "<name>"` line stands, as `local function __bullmq_<name>(K, ARGV) ... end`, whose
  first line builds that script's KEYS from K, a table of keys in this script's order, by name
  (bullmq-host.ts, BULLMQ_ADD_SCRIPTS). The local KEYS and ARGV shadow the globals, so their
  bodies run unchanged. `--- @bullmq-raw "<name>"` splices one as `__bullmq_<name>(KEYS, ARGV)`,
  given its own KEYS (a script that may be missing is then a stub, and BULLMQ_CAN_<…> false).
  `--- @bullmq-host` stands for the BullMQ facts the scripts use (bullmq-host.ts, BULLMQ_LUA).
  Rewriting BullMQ's add scripts was rejected: about ten includes (id counter,
  markers, paused/maxed, priority counter, delayed score, events) would have to be kept in step
  with every BullMQ release, and a mistake there means jobs that silently never run.

  Input:
    KEYS[1]  wait         KEYS[2]  paused      KEYS[3]  meta      KEYS[4] id
    KEYS[5]  completed    KEYS[6]  delayed     KEYS[7]  active    KEYS[8] events
    KEYS[9]  marker       KEYS[10] prioritized KEYS[11] pc
    KEYS[12] the index hash the key's jobs are listed in (includes/ojs-index): the queue's, or
             the prefix's for a policy without the `queue` dimension

    ARGV[1]  BullMQ's msgpacked args (key prefix, custom id, name, timestamp, …), as BullMQ encoded them
    ARGV[2]  job data (JSON)
    ARGV[3]  BullMQ's msgpacked options
    ARGV[4]  root key prefix with its colon ("bull:"), to find jobs of other queues
    ARGV[5]  this queue's name
    ARGV[6]  uniqueness key (§4); "" = no policy: only the id claim of step 2 and BullMQ's add
             (the backend's plain enqueue with a caller-chosen id; KEYS[12] unused)
    ARGV[7]  on_conflict: reject | ignore | replace | replace_except_schedule
    ARGV[8]  policy states, comma-separated OJS states
    ARGV[9]  period years, "" when the policy has no period
    ARGV[10] period months
    ARGV[11] period fixed part in ms (weeks … seconds)
    ARGV[12] the policy without its defaults (compactUniquePolicy, JSON), stored on the job as ojsPolicy
    ARGV[13] OJS meta (JSON), stored on the job as ojsMeta; "" = none (`{}`), nothing stored
    ARGV[14] retention in ms of the archive of a job this add cancels, when the job's own policy
             does not need it longer (includes/ojs-own-policy); 0 = no expiry
    ARGV[15] "" or the prefix's queue set (<prefix>:ojs:global:queues): a custom id must then be
             new in every queue of that set, not only in this one (the backend's OJS ids); an
             insert adds this queue to the set, in this script, so a refused add registers nothing
    ARGV[16] the add's request token, made by the client ("" = none): stored on the inserted job
             as `ojsReq` (see "Idempotent")
    ARGV[17] the terminal states the policy counts, as index bits (includes/ojs-own-policy)
    ARGV[18] the index's home queue (entries of its jobs omit the queue name): this queue's name
             in NFC for a per-queue index, "" for the prefix's
    ARGV[19] x_period_anchor: "" (created_at) | scheduled_at | last_duplicate | finished_at
    ARGV[20] "" or, for an anchored policy with a period, its period as the job hash keeps it
             (`ojsPeriod`, includes/ojs-own-policy): the index then recomputes the job's window
             end from its current anchor
    ARGV[21] x_update: "" = none, else JSON { state: [field, …] } (fields in UPDATE_FIELDS order),
             with x_max_wait also "~maxWait": [years, months, fixed ms] (includes/ojs-read-policy):
             an update's due time is then at most the existing job's created_at + that
    ARGV[22] "n": the policy is one BullMQ's own deduplication key answers (bullmq-native-path.ts),
             so the add first tries the native path (includes/ojs-native-add), which answers
             unless the key's index field exists; "r": the same add written again by ioredis
             after a lost reply (bullmq-script-set.ts); "" otherwise
    ARGV[23] "c": count a duplicate on the job it met (includes/ojs-count-duplicate; the
             `countDuplicates` option); "": nothing counted, nothing written for it
    ARGV[last]  the layout check, after the script's own arguments (includes/ojs-layout): the index's namespace (the queue's for no policy), and the prefix's with ARGV[15]; recorded by an insert, a replace or an update

  Steps (1-4 only read; every write comes after the last check, in 5-7), after the native path
  (ARGV[22], includes/ojs-native-add: its own steps, the same replies) when it did not answer:
    1. now = Redis TIME. It becomes the new job's `timestamp` (OJS created_at) and is the `now`
       of the period check: one clock for both, whatever the producers' clocks say (§7.2).
    2. A custom id that already exists (live or archived; in this queue, or with ARGV[15] in any
       queue of the set) -> "id_exists", nothing written; unless this add's own token inserted
       it -> the first run's reply (idempotent).
    3. Observe every job of the key's index entries with its OJS state (includes/ojs-observe): a
       job carrying this add's token -> the first run's reply, nothing written. The entries no
       decision can need again are left out of the field to write back (O(entries of this key),
       never O(queue depth)): their job is gone or the id now holds another job, or the job is
       finished and neither its own policy nor this add's counts it.
    4. Decide (includes/ojs-decide-conflict, the twin of the core's decideUniqueConflict). For an
       insert or replace, check what BullMQ's add needs to insert without a failure code: no
       parent (its only refusal, -5; the adapter never sends one) and no `de` option (BullMQ's
       deduplication, which could return another job instead of inserting); and, for a replace
       with a counter id, that the id it is about to name is free.
    5. ignore / reject / reject_active -> under x_period_anchor "last_duplicate", record now on
                  every duplicate (`ojsLast`, includes/ojs-observe ojsTouch, a reject too); write
                  the key's entries back if observing or touching changed them, and keep the
                  archive of a widened cancelled entry as long as it now counts (ojsKeepArchives);
                  (includes/ojs-answer-duplicate)
                  XADD `deduplicated` (BullMQ's own event name and fields: jobId = the existing
                  job, deduplicatedJobId = the incoming id, "" for a counter id), nothing inserted.
    5''. successor (x_successor: the oldest duplicate is active, in this queue) -> the add kept as
                  its pending successor in BullMQ's keepLastIfActive layout, replacing any
                  (includes/ojs-successor-add); answered as for ignore, with the successor's id.
    5'. update (x_update) -> the existing job updated in place (includes/ojs-update-job, with
                  BullMQ's own changePriority / changeDelay / promote spliced), now recorded as
                  for ignore under "last_duplicate", the key's entries written back, and the
                  `deduplicated` event; nothing inserted.
    6. insert  -> BullMQ add (the variant BullMQ itself would pick: delay > priority >
                  standard), then the OJS fields on the job hash (ojsKey, ojsPolicy, ojsReq;
                  ojsMeta when not empty; ojsOwn when the policy counts `cancelled`; ojsPeriod
                  for an anchored policy with a period) and the key's
                  index field with the new entry; with no policy (ARGV[6] "") BullMQ's add and
                  ojsReq.
       replace -> the same, after archiving every live duplicate (includes/ojs-archive-job); a
                  finished one is left as it is (a terminal state is never left). Every
                  duplicate's entry is marked superseded (OJS_SUPERSEDED_BIT: no candidate once
                  finished), and the new job records their ids (ojsReplaced).
                  replace_except_schedule over a scheduled job gives the new job that job's due
                  time.
    7. After an insert, the sweep (includes/ojs-index, ojsSweep): a fixed number of index fields
       drawn at random lose the entries no policy can count any more (bounded work, no scans).

  All-or-nothing, by construction: steps 1-4 read only, and every check that can refuse the add
  is among them. The writes of 5-7 cannot fail: archiving acts on keys step 3 saw exist, BullMQ's
  add has been checked for its one refusal (and returns the id it inserted), and the rest are
  HSET/HDEL/SADD/XADD on keys of their own type. An update's moves are BullMQ's own scripts acting
  on a job step 3 saw, in the list or set step 3 found it in, which excludes their failure codes
  (includes/ojs-update-job). An unexpected failure code from BullMQ's add is
  still checked before any OJS field is written, but by then a replace has archived: hence the
  precondition checks in 4 rather than a test afterwards.

  Idempotent: ioredis re-sends a command whose reply was lost to a reconnect, so this script can
  run twice for one add. The second run finds its token (step 2 by id, step 3 in the key's index
  entries) and returns the first run's reply (includes/ojs-replay), writing nothing: the same job
  id, the same outcome, the same replaced ids. Recognised while the inserted job is in the key's
  index entries (a live or failed job always is, a finished one for the replay grace after it
  finished, a cancelled one for the replay grace after it was cancelled: includes/ojs-index,
  OJS_REPLAY_GRACE_MS) or, for a custom id, while the job or its
  archive exists; a first run that inserted nothing wrote nothing to recognise, and deciding again is as
  if the add had come a moment later.

  Output:
    { "created", jobId, nowMs [, deduplicationId] }   the native path's: the `deid` it set
    { "ignored", existingId, existingState, existingQueue, nowMs, existingHash }
    { "duplicate" | "active", existingId, existingState, existingQueue, nowMs }
    { "successor", existingId, existingState, existingQueue, nowMs, existingHash, successorId }
                                x_successor: the active job, and the id its pending successor will have
    { "updated", existingId, existingState, existingQueue, nowMs, existingHash, { field, … } }
                                x_update: the existing job after the update, and what changed
    { "replaced", jobId, nowMs, { { id, queue, state, hash }, … } }
                                every duplicate, oldest first: "cancelled" and its archive, or a
                                finished one's own state and hash
    { "id_exists", jobId }
    { "refused_option", path }  an option BullMQ's add would not insert with, nothing written
    { "successor_queue", queue }   x_successor met an active job in another queue (`queue`), nothing written
    { "counter_id_taken", id }  a replace's counter id already names a job (step 4), nothing written
    { "bullmq_error", code }    BullMQ's add returned a negative code (its causes are checked in
                                step 4, so never expected; a replace has archived by then)
]]
local rcall = redis.call
-- Index fields the sweep draws per insert (includes/ojs-index): dead entries settle at about
-- 1/(k-1) of the live ones: 4 keeps a steady workload's dead entries at a third of the live ones
-- (docs/design/bullmq.md) for a few more HMGETs per insert.
local OJS_SWEEP_SAMPLES = 4

--- @bullmq-host

--- @include "includes/ojs-job-state"
--- @include "includes/ojs-period-end"
--- @include "includes/ojs-own-policy"
--- @include "includes/ojs-decide-conflict"
--- @include "includes/ojs-archive-job"
--- @include "includes/ojs-read-job"
--- @include "includes/ojs-split-member"
--- @include "includes/ojs-read-policy"
--- @include "includes/ojs-id-taken"
--- @include "includes/ojs-index"
--- @include "includes/ojs-observe"
--- @include "includes/ojs-answer-duplicate"
--- @include "includes/ojs-replay"

--- @bullmq "addStandardJob"
--- @bullmq "addDelayedJob"
--- @bullmq "addPrioritizedJob"
--- @include "includes/ojs-bullmq-add"
--- @bullmq "changePriority"
--- @bullmq "changeDelay"
--- @bullmq "promote"
-- After the spliced scripts it calls.
--- @include "includes/ojs-update-job"
--- @bullmq-raw "releaseParentIfNoPendingDependencies"
--- @include "includes/ojs-detach-child"
--- @include "includes/ojs-unique-add"
--- @include "includes/ojs-native-add"
--- @include "includes/ojs-layout"

local layoutRefusal, layoutMissing = ojsLayoutCheck(ARGV)
if layoutRefusal then return layoutRefusal end

local reply = nil
if ARGV[22] ~= "" then reply = ojsNativeAdd(KEYS, ARGV) end
if reply == nil then reply = ojsUniqueAdd(KEYS, ARGV, nil) end
if reply[1] == "created" or reply[1] == "replaced" or reply[1] == "updated" then ojsLayoutRecord(layoutMissing) end
return reply
