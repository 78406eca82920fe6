-- Foundation: schemas, the request role, the clock, organizations, people, keys,
-- projects and their access grants, competence grants and the audit log.
--
-- Every tenant table carries organization_id first in its primary key so the schema
-- can later be distributed by organization. Row-level security for each table lives
-- in db/policies/<table>.sql.

create schema if not exists app;
create schema if not exists api;

-- Requests run as this role. It owns nothing and cannot bypass row-level security.
-- Roles are cluster-wide: several databases of one cluster (test databases, say) may
-- migrate at once, so a concurrent creation is not an error.
do $$
begin
  create role api nologin noinherit nobypassrls;
exception when duplicate_object or unique_violation then null;
end $$;

-- A non-superuser owner needs membership to switch its request connections to api.
do $$
begin
  execute format('grant api to %I', current_user);
exception when others then null; -- already a member, or a superuser who needs none
end $$;

grant usage on schema app, api to api;

-- The clock every rule reads. Tests pin it; production leaves the table empty.
create table app.clock (
  singleton boolean primary key default true check (singleton),
  pinned_at timestamptz not null
);
-- Not tenant data: one deployment-wide row.
alter table app.clock enable row level security;
alter table app.clock force row level security;

-- Redefined (unchanged) in db/functions/core.sql; defined here because column
-- defaults below read it.
create function app.now() returns timestamptz language sql stable as $$
  select coalesce((select pinned_at from app.clock), now())
$$;

-- Deployment-wide secrets (the cursor signing key). Never readable by api.
create table app.deployment_secrets (
  name text primary key,
  value bytea not null
);
alter table app.deployment_secrets enable row level security;
alter table app.deployment_secrets force row level security;

insert into app.deployment_secrets (name, value)
values ('cursor_signing_key',
        decode(replace(gen_random_uuid()::text || gen_random_uuid()::text, '-', ''), 'hex'));

create table app.organizations (
  id uuid primary key default gen_random_uuid(),
  slug text not null check (slug ~ '^[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$'),
  name text not null check (btrim(name) <> ''),
  -- null: every member may publish skills; otherwise {"roles": [...]} admits roles.
  skill_sharing_policy jsonb,
  created_at timestamptz not null default app.now()
);
create unique index organizations_slug_key on app.organizations (lower(slug));

create table app.users (
  id uuid primary key default gen_random_uuid(),
  email text not null check (position('@' in email) > 1),
  email_verified boolean not null default false,
  name text not null default '',
  -- scrypt, encoded as scrypt$N$r$p$salt$hash (base64); null for users who never set one.
  password_hash text,
  created_at timestamptz not null default app.now()
);
create unique index users_email_key on app.users (lower(email));

create table app.memberships (
  organization_id uuid not null references app.organizations (id) on delete cascade,
  user_id uuid not null references app.users (id) on delete cascade,
  role text not null check (role in ('owner', 'admin', 'developer', 'editor', 'member')),
  disabled boolean not null default false,
  created_at timestamptz not null default app.now(),
  primary key (organization_id, user_id)
);
create index memberships_user_idx on app.memberships (user_id);

create table app.teams (
  organization_id uuid not null references app.organizations (id) on delete cascade,
  id uuid not null default gen_random_uuid(),
  name text not null check (btrim(name) <> ''),
  created_at timestamptz not null default app.now(),
  primary key (organization_id, id),
  unique (id)
);
create unique index teams_name_key on app.teams (organization_id, lower(name));

create table app.team_members (
  organization_id uuid not null,
  team_id uuid not null,
  user_id uuid not null references app.users (id) on delete cascade,
  primary key (organization_id, team_id, user_id),
  foreign key (organization_id, team_id) references app.teams (organization_id, id) on delete cascade,
  foreign key (organization_id, user_id) references app.memberships (organization_id, user_id) on delete cascade
);
create index team_members_user_idx on app.team_members (organization_id, user_id);

-- A key belongs to the user who created it and acts as that user in whichever
-- organization the request selects; it is not tenant data of one organization.
create table app.api_keys (
  id uuid primary key default gen_random_uuid(),
  user_id uuid not null references app.users (id) on delete cascade,
  name text not null check (btrim(name) <> ''),
  -- sha256 of the whole opaque key; the plaintext is shown once and never stored.
  key_hash bytea not null unique,
  expires_at timestamptz,
  revoked_at timestamptz,
  last_used_at timestamptz,
  created_at timestamptz not null default app.now()
);
create index api_keys_user_idx on app.api_keys (user_id);

create table app.projects (
  organization_id uuid not null references app.organizations (id) on delete cascade,
  id uuid not null default gen_random_uuid(),
  name text not null check (btrim(name) <> '' and name = btrim(name)),
  key text check (key ~ '^[A-Z][A-Z0-9]{1,5}$'),
  description text,
  external_item_id text check (external_item_id <> ''),
  archived_at timestamptz,
  legal_hold_at timestamptz,
  created_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default app.now(),
  updated_at timestamptz not null default app.now(),
  primary key (organization_id, id),
  unique (id)
);
create unique index projects_key_key on app.projects (organization_id, key) where key is not null;
create unique index projects_external_item_id_key on app.projects (organization_id, external_item_id)
  where external_item_id is not null;
create index projects_created_idx on app.projects (organization_id, created_at desc, id desc);

create table app.project_access (
  organization_id uuid not null,
  project_id uuid not null,
  id uuid not null default gen_random_uuid(),
  user_id uuid references app.users (id) on delete cascade,
  team_id uuid,
  level text not null check (level in ('read', 'edit')),
  created_at timestamptz not null default app.now(),
  primary key (organization_id, id),
  check ((user_id is null) <> (team_id is null)),
  foreign key (organization_id, project_id) references app.projects (organization_id, id) on delete cascade,
  foreign key (organization_id, team_id) references app.teams (organization_id, id) on delete cascade
);
create unique index project_access_user_key on app.project_access (organization_id, project_id, user_id)
  where user_id is not null;
create unique index project_access_team_key on app.project_access (organization_id, project_id, team_id)
  where team_id is not null;
create index project_access_user_idx on app.project_access (organization_id, user_id);
create index project_access_team_idx on app.project_access (organization_id, team_id);

create table app.competence_grants (
  organization_id uuid not null references app.organizations (id) on delete cascade,
  id uuid not null default gen_random_uuid(),
  user_id uuid not null,
  competence text not null check (competence in ('notifications.export', 'skills.publish', 'rest.act-as')),
  expires_at timestamptz,
  revoked_at timestamptz,
  granted_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default app.now(),
  primary key (organization_id, id),
  -- Removing a member revokes their grants by removing them.
  foreign key (organization_id, user_id) references app.memberships (organization_id, user_id) on delete cascade
);
create index competence_grants_user_idx on app.competence_grants (organization_id, user_id);

-- Append-only: rows are inserted by the operations that act; a trigger refuses
-- every update and delete, whoever asks.
create table app.audit_log (
  organization_id uuid not null references app.organizations (id) on delete cascade,
  id bigint generated always as identity,
  actor_user_id uuid,
  action text not null,
  subject_type text not null,
  subject_id text,
  data jsonb not null default '{}',
  created_at timestamptz not null default app.now(),
  primary key (organization_id, id)
);

create function app.audit_log_is_append_only() returns trigger language plpgsql as $$
begin
  -- An organization's removal takes its log with it (foreign-key cascade runs as the
  -- table owner at nesting depth > 1); nothing else may rewrite history.
  if tg_op = 'DELETE' and pg_trigger_depth() > 1 then
    return old;
  end if;
  raise exception 'the audit log is append-only' using errcode = 'insufficient_privilege';
end $$;

create trigger audit_log_append_only before update or delete on app.audit_log
  for each row execute function app.audit_log_is_append_only();

-- The model catalog beyond the built-in local provider.
create table app.model_providers (
  organization_id uuid not null references app.organizations (id) on delete cascade,
  slug text not null check (slug ~ '^[a-z0-9][a-z0-9-]{0,62}$' and slug <> 'local'),
  kind text not null check (kind in ('openai-compatible')),
  base_url text not null,
  api_key text,
  created_at timestamptz not null default app.now(),
  primary key (organization_id, slug)
);

create table app.models (
  organization_id uuid not null references app.organizations (id) on delete cascade,
  id text not null check (btrim(id) <> ''),
  provider_slug text not null,
  context_window integer not null check (context_window > 0),
  max_output_tokens integer check (max_output_tokens > 0),
  capabilities jsonb not null default '["chat"]',
  pricing jsonb,
  is_default boolean not null default false,
  created_at timestamptz not null default app.now(),
  primary key (organization_id, id)
);
create unique index models_one_default on app.models (organization_id) where is_default;

create table app.secrets (
  organization_id uuid not null references app.organizations (id) on delete cascade,
  name text not null check (name ~ '^[A-Za-z_][A-Za-z0-9_]{0,127}$'),
  value text not null,
  created_at timestamptz not null default app.now(),
  primary key (organization_id, name)
);

-- Operators' allowlist for the deploymentEditor capability; deployment-wide.
create table app.deployment_editors (
  user_id uuid primary key references app.users (id) on delete cascade
);

-- Token buckets for rate limits, keyed by holder (user, source address, trigger).
-- Not tenant data: only SECURITY DEFINER functions touch it.
create unlogged table app.rate_buckets (
  bucket text primary key,
  tokens double precision not null,
  refreshed_at timestamptz not null
);
alter table app.rate_buckets enable row level security;
alter table app.rate_buckets force row level security;
