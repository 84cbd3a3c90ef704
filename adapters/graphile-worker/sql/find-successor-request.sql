-- find-successor-request: whether an x_successor add (keep-successor) committed, by its request
-- token, to answer a lost COMMIT reply. Unlike an inserted record, a pending successor is
-- overwritten by the key's next one, deleted by a replace or a release, or becomes a job: what
-- could have removed it is read too, so that "absent" is said only when nothing could have.
--
-- $1 text          the uniqueness key
-- $2 uuid          the add's request token
-- $3 timestamptz   the add's successor row's created_at (keep_successor's answer)
-- Steps: 1. the token on the key's pending successor, or on a ledger record (the successor was
--           promoted, and maybe replaced or released since): 'found';
--        2. else a write to the key since $3 that may have removed it: the key's pending
--           successor or a record created since (a later add's successor, a replace's or a
--           promotion's job), or a record released while its job was live or after $3 (a
--           release deletes the pending successor; the holder was live at $3): 'unknown';
--        3. else 'absent': it did not commit.
-- Returns: one row, `result` text: 'found', 'unknown' or 'absent'.
-- SQLSTATEs: none of its own.
select case
  when exists (select 1 from :OJS_UNIQUE_SCHEMA.successors s where s.fingerprint = $1::text and s.request_token = $2::uuid)
    or exists (select 1 from :OJS_UNIQUE_SCHEMA.jobs l where l.fingerprint = $1::text and l.request_token = $2::uuid)
    or exists (select 1 from :OJS_UNIQUE_SCHEMA.jobs l
               where l.fingerprint is null and l.released_fingerprint = $1::text and l.request_token = $2::uuid)
    then 'found'
  when exists (select 1 from :OJS_UNIQUE_SCHEMA.successors s where s.fingerprint = $1::text and s.created_at >= $3::timestamptz)
    or exists (select 1 from :OJS_UNIQUE_SCHEMA.jobs l where l.fingerprint = $1::text and l.created_at >= $3::timestamptz)
    or exists (select 1 from :OJS_UNIQUE_SCHEMA.jobs l
               where l.fingerprint is null and l.released_fingerprint = $1::text
                 and (l.created_at >= $3::timestamptz or l.finished_at is null or l.finished_at >= $3::timestamptz))
    then 'unknown'
  else 'absent'
end as result;
