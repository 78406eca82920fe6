-- Automations: versions (authored through MCP), reads, deletion and project installs.
-- Documents arrive validated by the server (server/automations/validate.ts); the
-- rules here are those of versions, deployment, access and installs.

-- An automation of the caller's organization by name; a row of nulls when none.
create or replace function app.automation_find(automation_name text) returns app.automations
language plpgsql stable as $$
declare
  a app.automations;
begin
  select * into a from app.automations
   where organization_id = app.org_id() and lower(name) = lower(coalesce(automation_name, ''));
  return a;
end $$;

-- An automation by name, or 404 AUTOMATION_NOT_FOUND.
create or replace function app.automation_named(automation_name text) returns app.automations
language plpgsql stable as $$
declare
  a app.automations := app.automation_find(automation_name);
begin
  if a.id is null then
    perform app.fail('AUTOMATION_NOT_FOUND', 404, 'No automation of that name.',
      jsonb_build_object('name', automation_name));
  end if;
  return a;
end $$;

create or replace function app.require_developer(action text) returns void language plpgsql stable as $$
begin
  if not app.has_developer_role() then
    perform app.fail('ROLE_FORBIDDEN', 403, format('%s needs the developer capability.', action));
  end if;
end $$;

-- The version a run of the automation would use: the deployed one, else the newest.
create or replace function app.automation_current_document(a app.automations) returns jsonb language sql stable as $$
  select v.document from app.automation_versions v
   where v.organization_id = a.organization_id and v.automation_id = a.id
     and v.version = coalesce(a.deployed_version, a.latest_version)
$$;

create or replace function app.automation_json(a app.automations) returns jsonb language sql stable as $$
  select jsonb_strip_nulls(jsonb_build_object(
      'name', a.name, 'latestVersion', a.latest_version, 'deployedVersion', a.deployed_version,
      'description', a.description,
      'createdAt', app.ms(a.created_at), 'updatedAt', app.ms(a.updated_at)))
    || jsonb_build_object(
      'projectIds', coalesce((select jsonb_agg(i.project_id order by i.created_at, i.project_id)
                                from app.automation_installs i
                               where i.organization_id = a.organization_id and i.automation_id = a.id), '[]'),
      'inputs', coalesce(app.automation_current_document(a)->'inputs', '{}'),
      -- Bound through its own routes (db/functions/0080_triggers.sql); null until then.
      'trigger', app.automation_trigger_json(a))
$$;

create or replace function app.version_json(a app.automations, v app.automation_versions) returns jsonb language sql stable as $$
  select jsonb_build_object(
    'name', a.name, 'version', v.version, 'deployed', v.version is not distinct from a.deployed_version,
    'latestVersion', a.latest_version, 'deployedVersion', a.deployed_version,
    'description', coalesce(v.document->>'description', ''), 'inputs', coalesce(v.document->'inputs', '{}'),
    'document', v.document, 'testsPassed', v.tests_passed, 'testsCheckedAt', app.ms(v.tests_checked_at),
    'createdAt', app.ms(v.created_at))
$$;

create or replace function api.automations_list(args jsonb) returns jsonb language plpgsql stable as $$
begin
  return jsonb_build_object('automations', coalesce((
    select jsonb_agg(app.automation_json(a) order by lower(a.name))
      from app.automations a where a.organization_id = app.org_id()), '[]'));
end $$;

create or replace function api.automation_get(args jsonb) returns jsonb language plpgsql stable as $$
declare
  a app.automations := app.automation_named(args->>'name');
  wanted text := coalesce(args->>'version', 'latest');
  number integer;
  v app.automation_versions;
begin
  number := case wanted when 'latest' then a.latest_version
                        when 'deployed' then a.deployed_version
                        else case when wanted ~ '^\d{1,9}$' then wanted::integer end end;
  select * into v from app.automation_versions
   where organization_id = a.organization_id and automation_id = a.id and version = number;
  if v.version is null then
    perform app.fail('AUTOMATION_VERSION_UNKNOWN', 404,
      case when wanted = 'deployed' then 'Nothing is deployed for this automation.'
           else format('This automation has no version %s.', wanted) end,
      jsonb_build_object('name', a.name, 'version', wanted, 'latestVersion', a.latest_version));
  end if;
  return app.version_json(a, v);
end $$;

create or replace function api.automation_versions(args jsonb) returns jsonb language plpgsql stable as $$
declare
  a app.automations := app.automation_named(args->>'name');
begin
  return jsonb_build_object('deployedVersion', a.deployed_version, 'versions', coalesce((
    select jsonb_agg(jsonb_build_object('version', v.version, 'deployed', v.version is not distinct from a.deployed_version,
                                        'testsPassed', v.tests_passed, 'testsCheckedAt', app.ms(v.tests_checked_at),
                                        'createdAt', app.ms(v.created_at)) order by v.version desc)
      from app.automation_versions v where v.organization_id = a.organization_id and v.automation_id = a.id), '[]'));
end $$;

-- MCP automation_create: version 1 of a new automation.
create or replace function api.automation_create(args jsonb) returns jsonb language plpgsql as $$
declare
  document jsonb := args->'document';
  a app.automations;
  v app.automation_versions;
begin
  perform app.require_developer('Creating an automation');
  begin
    insert into app.automations (organization_id, name, description, created_by)
    values (app.org_id(), document->>'name', coalesce(document->>'description', ''), app.user_id())
    returning * into a;
  exception when unique_violation then
    perform app.fail('AUTOMATION_NAME_TAKEN', 409, 'An automation of that name exists; save a new version of it instead.',
      jsonb_build_object('name', document->>'name'));
  end;
  insert into app.automation_versions (organization_id, automation_id, version, document, created_by)
  values (a.organization_id, a.id, 1, document, app.user_id()) returning * into v;
  perform app.audit('automation.created', 'automation', a.id::text, jsonb_build_object('name', a.name));
  return app.version_json(a, v);
end $$;

-- MCP automation_save: a new version; the deployed one stays deployed.
create or replace function api.automation_save(args jsonb) returns jsonb language plpgsql as $$
declare
  a app.automations;
  document jsonb := args->'document';
  v app.automation_versions;
begin
  perform app.require_developer('Saving an automation');
  a := app.automation_named(args->>'name');
  if lower(document->>'name') <> lower(a.name) then
    perform app.fail('INVALID_BODY', 400, 'The document''s name must be the automation''s name.',
      jsonb_build_object('issues', jsonb_build_array(jsonb_build_object('path', 'document.name', 'message', 'must be ' || a.name))));
  end if;
  update app.automations
     set latest_version = latest_version + 1, description = coalesce(document->>'description', ''), updated_at = app.now()
   where organization_id = a.organization_id and id = a.id
  returning * into a;
  insert into app.automation_versions (organization_id, automation_id, version, document, created_by)
  values (a.organization_id, a.id, a.latest_version, document, app.user_id()) returning * into v;
  perform app.audit('automation.saved', 'automation', a.id::text, jsonb_build_object('name', a.name, 'version', v.version));
  return app.version_json(a, v);
end $$;

-- MCP automation_deploy: points the automation at a version (the latest by default).
create or replace function api.automation_deploy(args jsonb) returns jsonb language plpgsql as $$
declare
  a app.automations;
  number integer;
begin
  perform app.require_developer('Deploying an automation');
  a := app.automation_named(args->>'name');
  number := coalesce((args->>'version')::integer, a.latest_version);
  if not exists (select 1 from app.automation_versions v
                  where v.organization_id = a.organization_id and v.automation_id = a.id and v.version = number) then
    perform app.fail('AUTOMATION_VERSION_UNKNOWN', 404, format('This automation has no version %s.', number),
      jsonb_build_object('name', a.name, 'version', number));
  end if;
  update app.automations set deployed_version = number, updated_at = app.now()
   where organization_id = a.organization_id and id = a.id returning * into a;
  perform app.audit('automation.deployed', 'automation', a.id::text, jsonb_build_object('name', a.name, 'version', number));
  return jsonb_build_object('name', a.name, 'deployedVersion', a.deployed_version);
end $$;

-- MCP automation_test records its verdict on the version tested; the latest wins.
-- passed is null when the document has no tests.
create or replace function api.automation_tests_record(args jsonb) returns jsonb language plpgsql as $$
declare
  a app.automations;
  v app.automation_versions;
begin
  perform app.require_developer('Testing an automation');
  a := app.automation_named(args->>'name');
  update app.automation_versions
     set tests_passed = (args->>'passed')::boolean,
         tests_checked_at = case when args->>'passed' is null then null else app.now() end
   where organization_id = a.organization_id and automation_id = a.id and version = (args->>'version')::integer
  returning * into v;
  if v.version is null then
    perform app.fail('AUTOMATION_VERSION_UNKNOWN', 404, format('This automation has no version %s.', args->>'version'));
  end if;
  return jsonb_build_object('name', a.name, 'version', v.version, 'testsPassed', v.tests_passed,
                            'testsCheckedAt', app.ms(v.tests_checked_at));
end $$;

create or replace function api.automation_delete(args jsonb) returns jsonb language plpgsql as $$
declare
  a app.automations;
begin
  perform app.require_developer('Deleting an automation');
  a := app.automation_named(args->>'name');
  -- Locked first: a start that inserted a run holds the row's key share until it
  -- commits, so the check below sees its run.
  perform 1 from app.automations where organization_id = a.organization_id and id = a.id for update;
  if exists (select 1 from app.runs r where r.organization_id = a.organization_id and r.automation_id = a.id
                and r.status in ('queued', 'running', 'waiting')) then
    perform app.fail('AUTOMATION_HAS_ACTIVE_RUNS', 409, 'A run of this automation is in flight; cancel it or let it finish first.',
      jsonb_build_object('name', a.name));
  end if;
  perform app.audit('automation.deleted', 'automation', a.id::text, jsonb_build_object('name', a.name));
  -- Versions and installs go by cascade; runs keep their name and document.
  delete from app.automations where organization_id = a.organization_id and id = a.id;
  return null;
end $$;

-- Installs into projects.
create or replace function app.install_guard(project text) returns app.projects language plpgsql stable as $$
declare
  p app.projects := app.project_for_read(project);
begin
  perform app.require_developer('Installing automations');
  return app.project_for_write(project);
end $$;

create or replace function api.project_automations(args jsonb) returns jsonb language plpgsql stable as $$
declare
  p app.projects := app.project_for_read(args->>'id');
begin
  return jsonb_build_object('automations', coalesce((
    select jsonb_agg(app.automation_json(a) order by lower(a.name))
      from app.automation_installs i
      join app.automations a on a.organization_id = i.organization_id and a.id = i.automation_id
     where i.organization_id = p.organization_id and i.project_id = p.id), '[]'));
end $$;

create or replace function api.automation_install(args jsonb) returns jsonb language plpgsql as $$
declare
  p app.projects := app.install_guard(coalesce(args->>'id', args->>'projectId'));
  a app.automations := app.automation_named(args->>'name');
  inserted integer;
begin
  insert into app.automation_installs (organization_id, automation_id, project_id, created_by)
  values (p.organization_id, a.id, p.id, app.user_id())
  on conflict do nothing;
  get diagnostics inserted = row_count;
  if inserted > 0 then
    perform app.audit('automation.installed', 'automation', a.id::text, jsonb_build_object('name', a.name, 'projectId', p.id));
  end if;
  return jsonb_build_object('name', a.name, 'added', inserted > 0);
end $$;

create or replace function api.automation_uninstall(args jsonb) returns jsonb language plpgsql as $$
declare
  p app.projects := app.install_guard(args->>'id');
  a app.automations := app.automation_named(args->>'name');
begin
  delete from app.automation_installs
   where organization_id = p.organization_id and automation_id = a.id and project_id = p.id;
  if not found then
    perform app.fail('AUTOMATION_NOT_INSTALLED', 404, 'This automation is not installed in the project.',
      jsonb_build_object('name', a.name, 'projectId', p.id));
  end if;
  perform app.audit('automation.uninstalled', 'automation', a.id::text, jsonb_build_object('name', a.name, 'projectId', p.id));
  return null;
end $$;

grant execute on function app.automation_find, app.automation_named, app.require_developer, app.automation_current_document,
  app.automation_json, app.version_json, api.automations_list, api.automation_get, api.automation_versions,
  api.automation_create, api.automation_save, api.automation_deploy, api.automation_tests_record,
  api.automation_delete, app.install_guard, api.project_automations, api.automation_install,
  api.automation_uninstall to api;
