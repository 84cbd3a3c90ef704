-- read-graphile-reliances: what Graphile Worker's schema holds of each object the adapter relies
-- on (the list is graphile-worker-host.ts), read from the catalogs in one query, without
-- touching the objects themselves.
--
-- $1 jsonb  the reliances: [{ id, kind ('table' | 'column' | 'function'), relation, column,
--           types (accepted column types, as format_type spells them), function, args
--           (argument names it must take), returns (a relation whose row type it must return) }]
-- Placeholders: :GRAPHILE_WORKER_SCHEMA_NAME (string literal).
-- Returns: one row per reliance, in input order: id, ok (boolean), found (text: the relation's
--          kind, the column's type, or the function's overloads; null when there is none).
-- SQLSTATEs: none of its own (a schema that does not exist reads as every object missing).
with ns as (
  select n.oid from pg_catalog.pg_namespace n where n.nspname = :GRAPHILE_WORKER_SCHEMA_NAME
), wanted as (
  select e.ord, e.item ->> 'id' as id, e.item ->> 'kind' as kind, e.item ->> 'relation' as relation,
    e.item ->> 'column' as "column", array(select jsonb_array_elements_text(e.item -> 'types')) as types,
    e.item ->> 'function' as "function", array(select jsonb_array_elements_text(e.item -> 'args')) as args,
    e.item ->> 'returns' as returns
  from jsonb_array_elements($1::jsonb) with ordinality as e(item, ord)
), seen as (
  select w.ord, w.id, w.kind, w.types,
    (select c.relkind::text from pg_catalog.pg_class c join ns on c.relnamespace = ns.oid
      where w.kind = 'table' and c.relname = w.relation) as relkind,
    (select pg_catalog.format_type(a.atttypid, a.atttypmod)
       from pg_catalog.pg_attribute a join pg_catalog.pg_class c on c.oid = a.attrelid join ns on c.relnamespace = ns.oid
      where w.kind = 'column' and c.relname = w.relation and a.attname = w."column" and a.attnum > 0 and not a.attisdropped) as column_type,
    (select bool_or(p.proargnames @> w.args and not p.proretset
                    and p.prorettype = (select c.reltype from pg_catalog.pg_class c join ns on c.relnamespace = ns.oid
                                         where c.relname = w.returns))
       from pg_catalog.pg_proc p join ns on p.pronamespace = ns.oid
      where w.kind = 'function' and p.proname = w."function") as function_ok,
    (select string_agg(format('%s(%s) returns %s', p.proname, pg_catalog.pg_get_function_identity_arguments(p.oid),
                              pg_catalog.format_type(p.prorettype, null)), '; ' order by p.oid)
       from pg_catalog.pg_proc p join ns on p.pronamespace = ns.oid
      where w.kind = 'function' and p.proname = w."function") as overloads
  from wanted w
)
select s.id,
  case s.kind
    when 'table' then coalesce(s.relkind in ('r', 'p'), false)
    when 'column' then coalesce(s.column_type = any(s.types), false)
    when 'function' then coalesce(s.function_ok, false)
    else false
  end as ok,
  case s.kind when 'table' then s.relkind when 'column' then s.column_type when 'function' then s.overloads end as found
from seen s
order by s.ord;
