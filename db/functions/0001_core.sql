-- Core helpers every operation uses: the clock, coded refusals, the caller's
-- context, JSON time encoding, role ranks.

-- PL/pgSQL rather than SQL throughout the hot path: PostgreSQL before 18 re-plans a
-- SQL function's body on every call unless it can be inlined (no subqueries), while
-- PL/pgSQL keeps its plans for the session.
create or replace function app.now() returns timestamptz language plpgsql stable as $$
begin
  return coalesce((select pinned_at from app.clock), now());
end $$;

-- Epoch milliseconds, the wire form of every timestamp. STABLE like extract() on a
-- timestamptz, so the planner inlines it.
create or replace function app.ms(ts timestamptz) returns bigint language sql stable as $$
  select (extract(epoch from ts) * 1000)::bigint
$$;

-- The instant of a wire timestamp (epoch milliseconds).
create or replace function app.from_ms(ms bigint) returns timestamptz language sql immutable as $$
  select 'epoch'::timestamptz + ms * interval '1 millisecond'
$$;

-- A domain refusal. The server maps SQLSTATE TL000 to the error envelope using the
-- JSON in DETAIL, without knowing the rule that raised it.
create or replace function app.fail(code text, status integer, message text, data jsonb default '{}')
returns void language plpgsql as $$
begin
  raise exception using
    errcode = 'TL000',
    message = message,
    detail = jsonb_build_object('code', code, 'status', status, 'data', coalesce(data, '{}'::jsonb))::text;
end $$;

-- The caller, set by app.authenticate in transaction-local settings.
create or replace function app.user_id() returns uuid language sql stable as $$
  select nullif(current_setting('app.user_id', true), '')::uuid
$$;

create or replace function app.org_id() returns uuid language sql stable as $$
  select nullif(current_setting('app.org_id', true), '')::uuid
$$;

create or replace function app.role() returns text language sql stable as $$
  select nullif(current_setting('app.role', true), '')
$$;

create or replace function app.role_rank(role text) returns integer language sql immutable as $$
  select case role when 'owner' then 5 when 'admin' then 4 when 'developer' then 3
                   when 'editor' then 2 when 'member' then 1 else 0 end
$$;

-- Owners and admins: every project, archive and restore.
create or replace function app.is_admin() returns boolean language sql stable as $$
  select app.role() in ('owner', 'admin')
$$;

-- Editor and above may write to projects they have edit access to.
create or replace function app.has_editing_role() returns boolean language sql stable as $$
  select app.role_rank(app.role()) >= app.role_rank('editor')
$$;

create or replace function app.has_developer_role() returns boolean language sql stable as $$
  select app.role_rank(app.role()) >= app.role_rank('developer')
$$;

-- An identifier from a URL or body as a uuid, or null when it cannot be one, so a
-- malformed id is simply "not found" rather than an error.
create or replace function app.as_uuid(value text) returns uuid language sql immutable as $$
  select case when value ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' then value::uuid end
$$;

-- Trimmed of every kind of white space (the set JavaScript's trim removes, so the
-- server's shape checks and SQL agree), not only of spaces.
create or replace function app.trim_space(value text) returns text language sql immutable as $$
  select regexp_replace(value,
    '^[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]+|[\t\n\v\f\r \u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]+$',
    '', 'g')
$$;

-- Trimmed, NFC-normalized, and null when nothing is left: how caller-supplied
-- identifiers are stored and looked up.
create or replace function app.clean_identifier(value text) returns text language sql immutable as $$
  select nullif(normalize(app.trim_space(value), nfc), '')
$$;

-- Lengths on the wire are UTF-16 code units (what JavaScript's length counts): a
-- character beyond the Basic Multilingual Plane is two of them, one everywhere else.
create or replace function app.utf16_length(value text) returns integer language sql immutable as $$
  select length(value) + length(regexp_replace(value, '[^\U00010000-\U0010FFFF]', '', 'g'))
$$;

-- The longest prefix of at most `units` UTF-16 code units that never splits a
-- character (a surrogate pair is kept whole or left out).
create or replace function app.utf16_left(value text, units integer) returns text language plpgsql immutable as $$
declare
  cut integer;
begin
  if value is null or app.utf16_length(value) <= units then
    return value;
  end if;
  cut := units;
  -- Each astral character in the prefix takes two units: shrink until it fits.
  while app.utf16_length(left(value, cut)) > units loop
    cut := cut - greatest(1, (app.utf16_length(left(value, cut)) - units + 1) / 2);
  end loop;
  return left(value, cut);
end $$;

create or replace function app.audit(action text, subject_type text, subject_id text, data jsonb default '{}')
returns void language sql as $$
  insert into app.audit_log (organization_id, actor_user_id, action, subject_type, subject_id, data)
  values (app.org_id(), app.user_id(), action, subject_type, subject_id, coalesce(data, '{}'))
$$;

-- A figure of db/limits.json (loaded into app.limits by the migrator). An unknown
-- name is a defect of the caller, never a silent default.
create or replace function app.limit(limit_name text) returns numeric language plpgsql stable as $$
declare
  found numeric := (select l.value from app.limits l where l.name = limit_name);
begin
  if found is null then
    raise exception 'unknown limit %', limit_name;
  end if;
  return found;
end $$;

-- RATE_LIMIT_SCALE as the request carried it (app.authenticate), for the budgets an
-- operation takes itself; 1 outside a request.
create or replace function app.rate_scale() returns double precision language sql stable as $$
  select coalesce(nullif(current_setting('app.rate_scale', true), '')::double precision, 1)
$$;

-- Policy files are re-applied whenever they change and start by dropping every
-- policy on their table, so a policy removed from a file is removed from the database.
create or replace function app.drop_policies(target regclass) returns void language plpgsql as $$
declare
  policy record;
begin
  for policy in select polname from pg_policy where polrelid = target loop
    execute format('drop policy %I on %s', policy.polname, target);
  end loop;
end $$;

-- The request path's helpers; app.drop_policies stays the migrator's.
grant execute on function app.now, app.ms, app.from_ms, app.fail, app.user_id, app.org_id, app.role, app.role_rank, app.is_admin,
  app.has_editing_role, app.has_developer_role, app.as_uuid, app.trim_space, app.clean_identifier, app.utf16_length,
  app.utf16_left, app.audit,
  app.limit, app.rate_scale to api;
