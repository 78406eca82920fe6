-- Operator commands (the admin CLI and the seed file). They run on the owner's
-- connection, outside any caller's policies, and are never reachable over HTTP.

create or replace function app.operator_org_create(slug text, name text, skill_sharing_policy jsonb default null)
returns uuid language plpgsql as $$
declare
  created uuid;
begin
  insert into app.organizations (slug, name, skill_sharing_policy)
  values (lower(btrim(slug)), btrim(name), skill_sharing_policy)
  returning id into created;
  return created;
end $$;

create or replace function app.operator_org_id(slug text) returns uuid language plpgsql stable as $$
declare
  found uuid := (select id from app.organizations o where lower(o.slug) = lower(btrim(operator_org_id.slug)));
begin
  if found is null then
    raise exception 'no organization with slug %', slug;
  end if;
  return found;
end $$;

create or replace function app.operator_user_id(email text) returns uuid language plpgsql stable as $$
declare
  found uuid := (select id from app.users u where lower(u.email) = lower(btrim(operator_user_id.email)));
begin
  if found is null then
    raise exception 'no user with email %', email;
  end if;
  return found;
end $$;

create or replace function app.operator_user_create(email text, name text, password_hash text, email_verified boolean)
returns uuid language sql as $$
  insert into app.users (email, name, password_hash, email_verified)
  values (btrim(email), coalesce(btrim(name), ''), password_hash, coalesce(email_verified, false))
  returning id
$$;

create or replace function app.operator_member_add(org uuid, member uuid, role text, disabled boolean default false)
returns void language sql as $$
  insert into app.memberships (organization_id, user_id, role, disabled)
  values (org, member, role, coalesce(disabled, false))
  on conflict (organization_id, user_id) do update set role = excluded.role, disabled = excluded.disabled
$$;

create or replace function app.operator_key_create(owner uuid, name text, key_hash text, expires_at timestamptz)
returns uuid language sql as $$
  insert into app.api_keys (user_id, name, key_hash, expires_at)
  values (owner, btrim(name), decode(key_hash, 'hex'), expires_at)
  returning id
$$;

create or replace function app.operator_key_revoke(key uuid) returns boolean language sql as $$
  with revoked as (
    update app.api_keys set revoked_at = app.now() where id = key and revoked_at is null returning 1
  ) select exists (select 1 from revoked)
$$;

create or replace function app.operator_team_create(org uuid, name text) returns uuid language sql as $$
  insert into app.teams (organization_id, name) values (org, btrim(name)) returning id
$$;

create or replace function app.operator_team_member_add(org uuid, team uuid, member uuid) returns void language sql as $$
  insert into app.team_members (organization_id, team_id, user_id) values (org, team, member)
  on conflict do nothing
$$;

-- Creates a project exactly as its creator would over REST, so every naming and key
-- rule holds for seeded projects too.
create or replace function app.operator_project_create(org uuid, creator uuid, name text, key text default null,
                                                       description text default null, external_item_id text default null)
returns uuid language plpgsql as $$
declare
  created jsonb;
begin
  perform set_config('app.user_id', creator::text, true),
          set_config('app.org_id', org::text, true),
          set_config('app.role', (select m.role from app.memberships m
                                   where m.organization_id = org and m.user_id = creator), true);
  created := api.project_create(jsonb_strip_nulls(jsonb_build_object(
    'name', name, 'key', key, 'description', description, 'externalItemId', external_item_id)));
  perform set_config('app.user_id', '', true), set_config('app.org_id', '', true), set_config('app.role', '', true);
  return (created->'project'->>'id')::uuid;
end $$;

create or replace function app.operator_project_id(org uuid, name text) returns uuid language plpgsql stable as $$
declare
  found uuid[] := array(select id from app.projects p where p.organization_id = org and p.name = app.trim_space(operator_project_id.name));
begin
  if cardinality(found) <> 1 then
    raise exception 'expected one project named % in the organization, found %', name, cardinality(found);
  end if;
  return found[1];
end $$;

-- Grants a user or a team read or edit access; a second grant replaces the first.
create or replace function app.operator_project_grant(org uuid, project uuid, grantee_user uuid, grantee_team uuid, level text)
returns void language plpgsql as $$
begin
  delete from app.project_access
   where organization_id = org and project_id = project
     and (user_id = grantee_user or team_id = grantee_team);
  insert into app.project_access (organization_id, project_id, user_id, team_id, level)
  values (org, project, grantee_user, grantee_team, level);
end $$;

create or replace function app.operator_provider_add(org uuid, slug text, kind text, base_url text, api_key text)
returns void language sql as $$
  insert into app.model_providers (organization_id, slug, kind, base_url, api_key)
  values (org, slug, kind, base_url, api_key)
  on conflict (organization_id, slug) do update
    set kind = excluded.kind, base_url = excluded.base_url, api_key = excluded.api_key
$$;

-- capabilities: what the model is for, ["chat"] by default; a model listing
-- "embeddings" is the organization's embeddings model for knowledge search.
drop function if exists app.operator_model_add(uuid, text, text, integer, integer, boolean);
create or replace function app.operator_model_add(org uuid, model_id text, provider_slug text, context_window integer,
                                                  max_output_tokens integer, make_default boolean,
                                                  model_capabilities jsonb default '["chat"]')
returns void language plpgsql as $$
begin
  if provider_slug <> 'local' and not exists (
      select 1 from app.model_providers p where p.organization_id = org and p.slug = provider_slug) then
    raise exception 'no provider % in the organization', provider_slug;
  end if;
  if make_default then
    update app.models m set is_default = false where m.organization_id = org and m.is_default;
  end if;
  insert into app.models (organization_id, id, provider_slug, context_window, max_output_tokens, is_default, capabilities)
  values (org, model_id, provider_slug, context_window, max_output_tokens, coalesce(make_default, false),
          coalesce(model_capabilities, '["chat"]'))
  on conflict on constraint models_pkey do update
    set context_window = excluded.context_window,
        max_output_tokens = excluded.max_output_tokens, is_default = excluded.is_default,
        capabilities = excluded.capabilities;
end $$;

create or replace function app.operator_secret_set(org uuid, name text, value text) returns void language sql as $$
  insert into app.secrets (organization_id, name, value) values (org, name, value)
  on conflict (organization_id, name) do update set value = excluded.value
$$;

create or replace function app.operator_competence_grant(org uuid, holder uuid, competence text, expires_at timestamptz)
returns uuid language plpgsql as $$
declare
  granted uuid;
begin
  if not exists (select 1 from app.memberships m where m.organization_id = org and m.user_id = holder and not m.disabled) then
    raise exception 'the user is not an active member of the organization';
  end if;
  insert into app.competence_grants (organization_id, user_id, competence, expires_at)
  values (org, holder, regexp_replace(competence, '^tale:', ''), expires_at)
  returning id into granted;
  insert into app.audit_log (organization_id, actor_user_id, action, subject_type, subject_id, data)
  values (org, nullif(current_setting('app.user_id', true), '')::uuid, 'competence.granted', 'competence_grant', granted::text,
          jsonb_build_object('userId', holder, 'competence', regexp_replace(competence, '^tale:', ''),
                             'expiresAt', app.ms(expires_at)));
  return granted;
end $$;

-- Revokes a member's live grants, with an audit row each: on disabling and on removal.
-- revoked_by is whoever changed the membership (null for an operator command), as for
-- a revocation in the app (db/functions/0115_competence_grants.sql).
create or replace function app.revoke_member_grants(org uuid, member uuid, reason text) returns void language plpgsql as $$
declare
  revoked record;
begin
  for revoked in
    update app.competence_grants set revoked_at = app.now(), revoked_by = app.user_id()
     where organization_id = org and user_id = member and revoked_at is null
    returning id, competence
  loop
    insert into app.audit_log (organization_id, actor_user_id, action, subject_type, subject_id, data)
    values (org, nullif(current_setting('app.user_id', true), '')::uuid, 'competence.revoked', 'competence_grant',
            revoked.id::text, jsonb_build_object('userId', member, 'competence', revoked.competence, 'reason', reason));
  end loop;
end $$;

create or replace function app.revoke_grants_of_departing_member() returns trigger language plpgsql as $$
begin
  if tg_op = 'DELETE' then
    perform app.revoke_member_grants(old.organization_id, old.user_id, 'member removed');
    return old;
  end if;
  if new.disabled and not old.disabled then
    perform app.revoke_member_grants(new.organization_id, new.user_id, 'member disabled');
  end if;
  return new;
end $$;

drop trigger if exists memberships_revoke_grants on app.memberships;
create trigger memberships_revoke_grants after update of disabled or delete on app.memberships
  for each row execute function app.revoke_grants_of_departing_member();
drop function if exists app.revoke_grants_of_disabled_member();

-- Operator commands are never the request role's to call: nothing here is granted
-- to api (functions are the owner's alone unless a file grants them).

-- The harnesses this deployment runs agents on. A harness removed here is refused
-- when an agent is saved and fails a run's agent step at once; agents keep their
-- configuration until they are saved again.
create or replace function app.operator_harnesses() returns jsonb language sql stable as $$
  select app.harnesses()
$$;

create or replace function app.operator_harness_add(harness_id text, harness_name text) returns void language plpgsql as $$
begin
  if harness_id !~ '^[a-z0-9][a-z0-9-]{0,62}$' then
    raise exception 'a harness id is lowercase letters, digits and dashes (up to 63)';
  end if;
  insert into app.deployment_harnesses (id, name, position)
  values (harness_id, coalesce(nullif(trim(harness_name), ''), harness_id),
          coalesce((select max(position) from app.deployment_harnesses), 0) + 1)
  on conflict (id) do update set name = excluded.name;
end $$;

create or replace function app.operator_harness_remove(harness_id text) returns boolean language sql as $$
  with removed as (delete from app.deployment_harnesses where id = harness_id returning 1)
  select exists (select 1 from removed)
$$;
