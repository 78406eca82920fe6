-- The request login's session role and plan mode as its own role defaults, which
-- PostgreSQL applies at every login whatever the path. A pooler in transaction mode
-- (pgbouncer) passes no startup options on, so request connections opened through
-- one would otherwise act as the bare login, which may do nothing. Direct
-- connections still name both in their startup packet (server/core/db/connection.ts);
-- RESET ROLE returns to api either way, and api is all the login can become.
-- Roles are the cluster's, so the defaults hold for every database of it; set only
-- when missing, so migrations of several databases at once do not update the same
-- catalog rows. An owner without CREATEROLE cannot set them: the operator does
-- (docs/operations.md, "Connection pooling").
do $$
declare
  wanted text[] := array['role=api', 'plan_cache_mode=force_generic_plan'];
  present text[] := coalesce((select setconfig from pg_db_role_setting
                               where setrole = (select oid from pg_roles where rolname = 'api_login') and setdatabase = 0), '{}');
begin
  if not exists (select 1 from pg_roles where rolname = 'api_login') or present @> wanted then
    return;
  end if;
  alter role api_login set role = 'api';
  alter role api_login set plan_cache_mode = 'force_generic_plan';
exception when insufficient_privilege then raise notice 'api_login defaults not set: %', sqlerrm;
end $$;
