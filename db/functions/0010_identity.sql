-- GET /api/v1/me, /teams, /models.

-- skillPublish: the organization's skill sharing policy admits the caller's role (no
-- policy admits every role), or the caller holds a live skills.publish grant. Saving a
-- shared skill (db/functions/0150_skills.sql) and GET /me's capabilities both ask here.
create or replace function app.can_publish_skills() returns boolean language plpgsql stable as $$
declare
  sharing jsonb := (select o.skill_sharing_policy from app.organizations o where o.id = app.org_id());
begin
  return sharing is null
      or coalesce(sharing->'roles', '[]') ? app.role()
      or 'skills.publish' = any (app.live_competences());
end $$;

create or replace function app.capabilities() returns jsonb language plpgsql stable as $$
begin
  return jsonb_build_object(
    'developer', app.has_developer_role(),
    'deploymentEditor', exists (select 1 from app.deployment_editors d where d.user_id = app.user_id()),
    'notificationExport', app.can_export_notifications(),
    'skillPublish', app.can_publish_skills(),
    'actAs', app.is_admin() or 'rest.act-as' = any (app.live_competences()));
end $$;

create or replace function api.me(args jsonb) returns jsonb language plpgsql stable as $$
begin
  return jsonb_build_object(
    'user', (select jsonb_build_object('id', u.id, 'email', u.email, 'name', u.name,
                                       'emailVerified', u.email_verified)
               from app.users u where u.id = app.user_id()),
    'organization', (select jsonb_build_object('id', o.id, 'slug', o.slug, 'name', o.name, 'role', app.role())
                       from app.organizations o where o.id = app.org_id()),
    'organizations', (select coalesce(jsonb_agg(jsonb_build_object('slug', o.slug, 'name', o.name) order by o.slug), '[]')
                        from app.memberships m join app.organizations o on o.id = m.organization_id
                       where m.user_id = app.user_id() and not m.disabled),
    'capabilities', app.capabilities(),
    'key', (select jsonb_build_object('name', k.name, 'expiresAt', app.ms(k.expires_at))
              from app.api_keys k where k.id = nullif(current_setting('app.key_id', true), '')::uuid));
end $$;

create or replace function api.teams_list(args jsonb) returns jsonb language plpgsql stable as $$
begin
  return (select jsonb_build_object('teams', coalesce(jsonb_agg(jsonb_build_object(
            'id', t.id, 'name', t.name,
            'member', t.id in (select m from app.my_team_ids() m)) order by lower(t.name), t.id), '[]'))
            from app.teams t where t.organization_id = app.org_id());
end $$;

-- Coding harnesses a project agent may run on: the ones this deployment can run
-- (app.deployment_harnesses, kept by the operator).
create or replace function app.harnesses() returns jsonb language sql stable as $$
  select coalesce(jsonb_agg(jsonb_build_object('id', h.id, 'name', h.name) order by h.position, h.id), '[]')
    from app.deployment_harnesses h
$$;

-- The tool grants a project agent may hold: deployment-wide, listed by GET /models
-- and checked when an agent is saved (db/functions/0096_agents.sql).
create or replace function app.agent_tools() returns jsonb language sql immutable as $$
  select '[{"id": "files.read", "description": "Read the project''s files and folders"},
           {"id": "tasks.comment", "description": "Comment on the project''s tasks"},
           {"id": "tasks.create", "description": "Create tasks in the project"},
           {"id": "tasks.read", "description": "Read the project''s tasks and their comments"},
           {"id": "tasks.update", "description": "Move the project''s tasks between statuses"},
           {"id": "web.fetch", "description": "Fetch a public web page by its URL"}]'::jsonb
$$;

-- An organization's catalog: the built-in local provider's local-echo model (which
-- an organization may re-declare, e.g. to make it the default) and the models of its
-- configured providers. A model whose provider is gone is not accessible. The
-- caller's organization by default; the worker names the run's.
drop function if exists app.model_catalog();
create or replace function app.model_catalog(organization uuid default app.org_id()) returns table (
  id text, provider_slug text, context_window integer, max_output_tokens integer,
  capabilities jsonb, pricing jsonb, is_default boolean
) language plpgsql stable as $$
begin
  return query
  select m.id, m.provider_slug, m.context_window, m.max_output_tokens, m.capabilities, m.pricing, m.is_default
    from app.models m
   where m.organization_id = organization
     and (m.provider_slug = 'local'
          or exists (select 1 from app.model_providers p
                      where p.organization_id = m.organization_id and p.slug = m.provider_slug))
  union all
  select 'local-echo', 'local', 8192, 1024, '["chat"]'::jsonb, null::jsonb, false
   where not exists (select 1 from app.models m where m.organization_id = organization and m.id = 'local-echo');
end $$;

create or replace function api.models_list(args jsonb) returns jsonb language plpgsql stable as $$
begin
  return jsonb_build_object(
    'models', (select coalesce(jsonb_agg(jsonb_strip_nulls(jsonb_build_object(
                 'id', c.id, 'providerSlug', c.provider_slug, 'contextWindow', c.context_window,
                 'maxOutputTokens', c.max_output_tokens, 'capabilities', c.capabilities,
                 'pricing', c.pricing)) || jsonb_build_object('default', c.is_default)
                 order by c.provider_slug, c.id), '[]')
               from app.model_catalog() c),
    'harnesses', app.harnesses(),
    'tools', app.agent_tools());
end $$;

grant execute on function app.capabilities, api.me, api.teams_list, app.harnesses, app.agent_tools, app.model_catalog,
  api.models_list to api;
