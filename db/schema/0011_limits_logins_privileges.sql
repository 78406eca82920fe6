-- Limits in one table, a login for request connections, a run's pending answer in a
-- column of its own, and functions private to the owner unless granted.

-- db/limits.json, loaded by the migrator whenever the file changes; SQL reads it
-- through app.limit(name). Deployment-wide and public knowledge.
create table app.limits (
  name text primary key,
  value numeric not null check (value >= 0),
  unit text not null,
  meaning text not null
);
alter table app.limits enable row level security;
alter table app.limits force row level security;

-- The ceilings now live in db/limits.json, enforced by the functions that write these
-- columns; the table keeps only what no limit can change.
alter table app.folders drop constraint folders_depth_check;
alter table app.folders add constraint folders_depth_check check (depth >= 1);
alter table app.organizations drop constraint organizations_upload_max_bytes_check;
alter table app.organizations add constraint organizations_upload_max_bytes_check check (upload_max_bytes >= 1);

-- The answer that resumes a parked run (approval decision, ask answer), until the
-- engine takes it into the run's state. A column of its own, so the request role
-- can resume a run without being able to write the engine's state.
alter table app.runs add column resume jsonb;

-- api_login: the role request connections log in as. It holds no privilege of its
-- own (noinherit) and is a member of api only, so a request connection can be api
-- and nothing else: RESET ROLE leaves it powerless and SET ROLE to the owner fails.
-- Created without a password (trust authentication needs none; the migrator gives it
-- one, see server/core/db/migrate.ts). An owner without CREATEROLE cannot create it:
-- the operator then creates a login role that is a member of api and gives its URL
-- as DATABASE_REQUEST_URL.
do $$
begin
  create role api_login login noinherit nobypassrls;
exception
  when duplicate_object or unique_violation then null;
  when insufficient_privilege then raise notice 'api_login not created: %', sqlerrm;
end $$;
do $$
begin
  if exists (select 1 from pg_roles where rolname = 'api_login') then
    grant api to api_login;
  end if;
exception when insufficient_privilege then raise notice 'api not granted to api_login: %', sqlerrm;
end $$;

-- A function is the owner's alone until a function file grants it to api: the
-- default for functions this role creates from now on, and once for those that exist.
alter default privileges revoke execute on functions from public;
revoke execute on all functions in schema app, api from public;
