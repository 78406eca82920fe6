-- Project agents: list, create, read, save (a full configuration) and delete. The
-- route checks shapes and lengths (server/routes/agents.ts); the rules here are the
-- ones that need the organization's catalogs, the project's other agents or the
-- stored agent. Reads follow the project's read access, writes its write rules.

create or replace function app.agent_json(a app.project_agents) returns jsonb language sql stable as $$
  select jsonb_build_object('id', a.id, 'projectId', a.project_id, 'name', a.name, 'harness', a.harness,
    'model', a.model, 'modelProvider', a.model_provider, 'skills', to_jsonb(a.skills),
    'connectors', to_jsonb(a.connectors), 'tools', to_jsonb(a.tools), 'secrets', to_jsonb(a.secrets),
    'instructions', a.instructions, 'createdAt', app.ms(a.created_at), 'updatedAt', app.ms(a.updated_at))
$$;

-- A JSON list of names as text[]: in the order sent, or (`as_set`, for grants) each
-- name once and sorted, so the same set sent in another order is the same configuration.
create or replace function app.agent_names(names jsonb, as_set boolean) returns text[] language sql immutable as $$
  select coalesce(case when as_set then array_agg(distinct n order by n) else array_agg(n order by ord) end, '{}')
    from jsonb_array_elements_text(coalesce(nullif(names, 'null'), '[]')) with ordinality e(n, ord)
$$;

-- The agent of the project; 404 when absent, invisible or in another project. `locked`
-- for a save, which decides on the row as it is now.
create or replace function app.agent_in_project(p app.projects, agent text, locked boolean default false)
returns app.project_agents language plpgsql as $$
declare
  a app.project_agents;
begin
  if locked then
    select * into a from app.project_agents
     where organization_id = p.organization_id and project_id = p.id and id = app.as_uuid(agent) for update;
  else
    select * into a from app.project_agents
     where organization_id = p.organization_id and project_id = p.id and id = app.as_uuid(agent);
  end if;
  if a.id is null then
    perform app.fail('NOT_FOUND', 404, 'Agent not found.');
  end if;
  return a;
end $$;

-- The entries of the list args.<field> that are not `known`: a problem (`problem`
-- with the entry's path) for each, and the names themselves under data.<field>.
create or replace function app.agent_unknown_entries(args jsonb, field text, known text[], problem jsonb,
  out problems jsonb, out data jsonb) language sql immutable as $$
  select coalesce(jsonb_agg(problem || jsonb_build_object('path', field || '.' || (e.ord - 1)) order by e.ord), '[]'),
         case when count(*) > 0 then jsonb_build_object(field, jsonb_agg(distinct e.entry)) else '{}' end
    from jsonb_array_elements_text(coalesce(args->field, '[]')) with ordinality e(entry, ord)
   where not e.entry = any (known)
$$;

-- What the organization's catalogs refuse in a configuration, every problem at once:
-- each {code, path, message}, in the order the refusal picks its code by, with the data
-- its code names (data.harnesses: the eligible ids; data.tools and data.secrets: the
-- unknown names; data.modelProviders: who serves the model).
create or replace function app.agent_catalog_problems(organization uuid, args jsonb, out problems jsonb, out data jsonb)
language plpgsql stable as $$
declare
  harnesses jsonb := (select jsonb_agg(h.harness->'id') from jsonb_array_elements(app.harnesses()) h(harness));
  model text := args->>'model';
  provider text := args->>'modelProvider';
  serving text[] := array(select c.provider_slug from app.model_catalog(organization) c where c.id = model order by 1);
  missing record;
begin
  problems := '[]';
  data := '{}';
  if not coalesce(harnesses ? (args->>'harness'), false) then
    problems := problems || jsonb_build_object('code', 'PROJECT_AGENT_HARNESS_INVALID', 'path', 'harness',
      'message', 'must be one of the deployment''s harnesses');
    data := data || jsonb_build_object('harnesses', harnesses);
  end if;
  if cardinality(serving) = 0 then
    problems := problems || jsonb_build_object('code', 'PROJECT_AGENT_MODEL_INVALID', 'path', 'model',
      'message', 'is not a model of the organization''s catalog');
  end if;
  if provider is not null and provider <> 'local'
     and not exists (select 1 from app.model_providers mp where mp.organization_id = organization and mp.slug = provider) then
    problems := problems || jsonb_build_object('code', 'PROJECT_AGENT_PROVIDER_UNKNOWN', 'path', 'modelProvider',
      'message', 'is not a provider of the organization');
  elsif provider is not null and cardinality(serving) > 0 and not provider = any (serving) then
    problems := problems || jsonb_build_object('code', 'PROJECT_AGENT_MODEL_INVALID', 'path', 'modelProvider',
      'message', format('does not serve the model %s', model));
    data := data || jsonb_build_object('modelProviders', serving);
  elsif provider is null and cardinality(serving) > 1 then
    problems := problems || jsonb_build_object('code', 'PROJECT_AGENT_MODEL_INVALID', 'path', 'modelProvider',
      'message', format('is required: several providers serve the model %s', model));
    data := data || jsonb_build_object('modelProviders', serving);
  end if;
  missing := app.agent_unknown_entries(args, 'tools', array(select t.tool->>'id' from jsonb_array_elements(app.agent_tools()) t(tool)),
    jsonb_build_object('code', 'PROJECT_AGENT_TOOL_UNKNOWN', 'message', 'is not a known tool grant'));
  problems := problems || missing.problems;
  data := data || missing.data;
  missing := app.agent_unknown_entries(args, 'secrets', array(select s.name from app.secrets s where s.organization_id = organization),
    jsonb_build_object('code', 'PROJECT_AGENT_SECRET_UNKNOWN', 'message', 'is not a secret of the organization'));
  problems := problems || missing.problems;
  data := data || missing.data;
end $$;

-- The agent `args` configures, as a row not yet written: `stored` (a null row for a
-- create) with every field replaced, the optional ones reset when omitted. Refuses a
-- change of secret grants by anyone but an owner or admin (so an editor's save must
-- send the stored grants back), then whatever the catalogs refuse: one refusal naming
-- every problem in data.issues, coded by the first.
create or replace function app.agent_configured(p app.projects, stored app.project_agents, args jsonb)
returns app.project_agents language plpgsql stable as $$
declare
  a app.project_agents := stored;
  refused record;
  unseen record;
  problems jsonb;
begin
  a.organization_id := p.organization_id;
  a.project_id := p.id;
  a.name := app.clean_identifier(args->>'name');
  a.harness := args->>'harness';
  a.model := args->>'model';
  a.model_provider := args->>'modelProvider';
  a.skills := app.agent_names(args->'skills', false);
  a.connectors := app.agent_names(args->'connectors', false);
  a.tools := app.agent_names(args->'tools', true);
  a.secrets := app.agent_names(args->'secrets', true);
  a.instructions := args->>'instructions';
  if a.secrets is distinct from coalesce(stored.secrets, '{}') and not app.is_admin() then
    perform app.fail('ROLE_FORBIDDEN', 403, 'Only owners and admins change an agent''s secret grants; send the stored ones back.',
      jsonb_build_object('secrets', to_jsonb(coalesce(stored.secrets, '{}'))));
  end if;
  refused := app.agent_catalog_problems(p.organization_id, args);
  -- Skills name skills the caller can see (db/functions/0150_skills.sql: theirs and the
  -- organization's, as the skills policy shows them); one the stored agent already
  -- names stays valid, so a save never fails over a skill someone else may see.
  unseen := app.agent_unknown_entries(args, 'skills',
    array(select k.slug from app.skills k where k.organization_id = p.organization_id) || coalesce(stored.skills, '{}'),
    jsonb_build_object('code', 'PROJECT_AGENT_SKILL_UNKNOWN', 'message', 'is not a skill you can see'));
  problems := refused.problems || unseen.problems;
  if jsonb_array_length(problems) > 0 then
    perform app.fail(problems->0->>'code', 400,
      format('The agent is not valid: %s %s', problems->0->>'path', problems->0->>'message'),
      refused.data || unseen.data || jsonb_build_object('issues',
        (select jsonb_agg(problem - 'code') from jsonb_array_elements(problems) problem)));
  end if;
  return a;
end $$;

-- Writes a configured agent: a create when it has no id yet, else a save. The name
-- index decides between racing writers of one name.
create or replace function app.agent_write(a app.project_agents) returns app.project_agents language plpgsql as $$
begin
  if a.id is null then
    insert into app.project_agents (organization_id, project_id, name, harness, model, model_provider, skills, connectors,
                                    tools, secrets, instructions, created_by)
    values (a.organization_id, a.project_id, a.name, a.harness, a.model, a.model_provider, a.skills, a.connectors,
            a.tools, a.secrets, a.instructions, app.user_id())
    returning * into a;
  else
    -- Every save moves updatedAt on, also within one millisecond, so whoever holds the
    -- previous value is told their copy is stale.
    update app.project_agents
       set name = a.name, harness = a.harness, model = a.model, model_provider = a.model_provider, skills = a.skills,
           connectors = a.connectors, tools = a.tools, secrets = a.secrets, instructions = a.instructions,
           updated_at = greatest(app.now(), updated_at + interval '1 millisecond')
     where organization_id = a.organization_id and id = a.id
    returning * into a;
  end if;
  return a;
exception when unique_violation then
  perform app.fail('PROJECT_AGENT_NAME_TAKEN', 409, 'Another agent of the project has that name.',
    jsonb_build_object('name', a.name));
end $$;

create or replace function api.agents_list(args jsonb) returns jsonb language plpgsql stable as $$
declare
  p app.projects := app.project_for_read(args->>'id');
begin
  return jsonb_build_object('agents', (select coalesce(jsonb_agg(app.agent_json(a) order by lower(a.name), a.id), '[]')
                                          from app.project_agents a
                                         where a.organization_id = p.organization_id and a.project_id = p.id));
end $$;

create or replace function api.agent_get(args jsonb) returns jsonb language plpgsql stable as $$
begin
  return jsonb_build_object('agent', app.agent_json(app.agent_in_project(app.project_for_read(args->>'id'), args->>'agentId')));
end $$;

create or replace function api.agent_create(args jsonb) returns jsonb language plpgsql as $$
declare
  p app.projects := app.project_for_write(args->>'id');
  a app.project_agents := app.agent_configured(p, null, args);
begin
  -- Creates in one project take turns, so racing creates never pass the limit together.
  perform pg_advisory_xact_lock(hashtextextended('project-agents:' || p.id, 0));
  if (select count(*) from app.project_agents x where x.organization_id = p.organization_id and x.project_id = p.id)
     >= app.limit('agent.maxPerProject') then
    perform app.fail('PROJECT_AGENT_LIMIT_REACHED', 409, 'The project holds as many agents as it may; delete one first.',
      jsonb_build_object('limit', app.limit('agent.maxPerProject')));
  end if;
  a := app.agent_write(a);
  perform app.audit('agent.created', 'agent', a.id::text, jsonb_build_object('projectId', p.id, 'name', a.name,
    'secrets', to_jsonb(a.secrets)));
  return jsonb_build_object('agent', app.agent_json(a));
end $$;

-- PUT: a full configuration of an existing agent. A save naming the stored
-- configuration writes nothing and keeps updatedAt.
create or replace function api.agent_update(args jsonb) returns jsonb language plpgsql as $$
declare
  p app.projects := app.project_for_write(args->>'id');
  stored app.project_agents := app.agent_in_project(p, args->>'agentId', true);
  a app.project_agents;
begin
  if (args->>'expectedUpdatedAt')::bigint < app.ms(stored.updated_at) then
    perform app.fail('PROJECT_AGENT_STALE', 409, 'The agent was changed since that copy was read; read it again.',
      jsonb_build_object('updatedAt', app.ms(stored.updated_at)));
  end if;
  a := app.agent_configured(p, stored, args);
  if row(a.*) is not distinct from row(stored.*) then
    return jsonb_build_object('agent', app.agent_json(stored));
  end if;
  a := app.agent_write(a);
  perform app.audit('agent.updated', 'agent', a.id::text, jsonb_build_object('projectId', p.id, 'name', a.name)
    || case when a.secrets is distinct from stored.secrets
            then jsonb_build_object('secrets', to_jsonb(a.secrets), 'previousSecrets', to_jsonb(stored.secrets))
            else '{}' end);
  return jsonb_build_object('agent', app.agent_json(a));
end $$;

create or replace function api.agent_delete(args jsonb) returns jsonb language plpgsql as $$
declare
  p app.projects := app.project_for_write(args->>'id');
  a app.project_agents := app.agent_in_project(p, args->>'agentId');
begin
  delete from app.project_agents where organization_id = a.organization_id and id = a.id;
  perform app.audit('agent.deleted', 'agent', a.id::text, jsonb_build_object('projectId', p.id, 'name', a.name));
  return null;
end $$;

-- The agent a run names, by id or by name ignoring case, in the run's project; a null
-- row when there is none. The worker's, on the owner's connection: never granted to api.
create or replace function app.agent_for_run(organization uuid, project uuid, agent_ref text) returns app.project_agents
language sql stable as $$
  select * from app.project_agents a
   where a.organization_id = organization and a.project_id = project
     and (a.id = app.as_uuid(agent_ref) or lower(a.name) = lower(app.clean_identifier(agent_ref)))
   -- An id outranks a name that happens to spell another agent's id.
   order by a.id = app.as_uuid(agent_ref) desc nulls last
   limit 1
$$;

grant execute on function app.agent_json, app.agent_names, app.agent_in_project, app.agent_unknown_entries,
  app.agent_catalog_problems, app.agent_configured, app.agent_write, api.agents_list, api.agent_get, api.agent_create,
  api.agent_update, api.agent_delete to api;
