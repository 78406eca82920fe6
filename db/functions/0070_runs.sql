-- Runs over REST: start, read, list, cancel, delete. A run's life:
-- queued -> running -> waiting -> queued ... -> completed | failed | cancelled; the
-- human waits are in 0071_run_waits.sql, the engine's transitions in 0072_run_engine.sql.

create or replace function app.run_is_live(status text) returns boolean language sql immutable as $$
  select status in ('queued', 'running', 'waiting')
$$;

-- The 202 body of a start, also answered to an Idempotency-Key replay.
create or replace function app.run_started_json(r app.runs) returns jsonb language sql stable as $$
  select jsonb_build_object('runId', r.id, 'version', r.version, 'name', r.automation_name, 'mode', r.mode)
$$;

-- complete: the single-run read (input, output, trace, effects); include: the parts a
-- listing adds to its summaries.
create or replace function app.run_json(r app.runs, complete boolean, parts text[] default '{}') returns jsonb
language sql stable as $$
  select jsonb_strip_nulls(jsonb_build_object(
      'runId', r.id, 'name', r.automation_name, 'version', r.version, 'mode', r.mode, 'status', r.status,
      'waitingFor', r.waiting_for, 'detail', r.detail, 'projectId', r.project_id,
      'startedBy', case when r.trigger_id is not null then 'trigger:' || r.trigger_id
                        when r.started_by is not null then 'user:' || r.started_by end,
      'startedVia', r.started_via,
      'createdAt', app.ms(r.created_at), 'startedAt', app.ms(r.started_at), 'finishedAt', app.ms(r.finished_at),
      'failureCode', r.failure_code))
    || case when complete then jsonb_build_object(
         'failureCode', r.failure_code, 'waitingFor', r.waiting_for, 'detail', r.detail,
         'finishedAt', app.ms(r.finished_at), 'input', r.input, 'output', r.output, 'trace', r.trace, 'effects', r.effects)
       else jsonb_strip_nulls(jsonb_build_object(
         'output', case when 'output' = any (parts) then coalesce(r.output, 'null'::jsonb) end,
         'trace', case when 'trace' = any (parts) then r.trace end,
         'effects', case when 'effects' = any (parts) then r.effects end)) end
$$;

-- A run the caller sees (in the named project when the route names one), or 404.
create or replace function app.run_visible(run text, project text default null) returns app.runs
language plpgsql stable as $$
declare
  r app.runs;
  p app.projects;
begin
  if project is not null then
    p := app.project_for_read(project);
  end if;
  select * into r from app.runs
   where organization_id = app.org_id() and id = app.as_uuid(run)
     and (p.id is null or project_id = p.id);
  if r.id is null then
    perform app.fail('NOT_FOUND', 404, 'Run not found.');
  end if;
  return r;
end $$;

-- The run locked for a change the caller's update policies admit (db/policies/runs.sql).
-- When they admit none (a finished run, a cancel without the capability) the row is
-- returned as read, unlocked, and the operation's own checks refuse it with their
-- code before anything is written.
create or replace function app.run_for_change(r app.runs) returns app.runs language plpgsql as $$
declare
  locked app.runs;
begin
  select * into locked from app.runs where organization_id = r.organization_id and id = r.id for update;
  if locked.id is null then
    return r;
  end if;
  return locked;
end $$;

-- The project a run starts in (null: organization-wide), by the binding rules: an
-- automation installed in one project runs there; installed in several, only in one
-- of them and only when named; not installed, organization-wide or in an
-- accessible project the caller may edit.
-- SECURITY DEFINER: an automation's binding is the set of all its installs, also in
-- projects the caller cannot see (the caller learns their number, not which).
create or replace function app.automation_install_projects(automation uuid) returns uuid[]
language sql stable security definer set search_path = pg_catalog, app as $$
  select coalesce(array_agg(i.project_id order by i.project_id), '{}') from app.automation_installs i
   where i.organization_id = app.org_id() and i.automation_id = automation
$$;

create or replace function app.run_project(a app.automations, named text) returns uuid language plpgsql stable as $$
declare
  installed uuid[] := app.automation_install_projects(a.id);
  p app.projects;
begin
  if named is null then
    if cardinality(installed) = 1 then
      -- The one project it is bound to, as long as the caller sees it.
      return (app.project_for_read(installed[1]::text)).id;
    elsif cardinality(installed) > 1 then
      perform app.fail('AUTOMATION_PROJECT_SCOPE_REQUIRED', 409,
        'The automation is installed in several projects; name the project to run it in.',
        jsonb_build_object('installs', cardinality(installed)));
    end if;
    return null;
  end if;
  p := app.project_for_read(named);
  if cardinality(installed) > 0 then
    if not p.id = any (installed) then
      perform app.fail('AUTOMATION_NOT_INSTALLED', 404, 'The automation is not installed in that project.',
        jsonb_build_object('name', a.name, 'projectId', p.id));
    end if;
  elsif not app.can_edit_project(p.id) then
    perform app.fail('ROLE_FORBIDDEN', 403, 'Running an organization-wide automation in a project needs edit access to it.');
  end if;
  return p.id;
end $$;

-- A live run of the automation's deployed version and its job, for a start its caller
-- has already decided (a trigger, a task's workflow): the one place such runs are written.
create or replace function app.run_begin(a app.automations, project uuid, input jsonb, started_by uuid, trigger uuid,
  via text, task uuid default null, run_id uuid default gen_random_uuid(), at timestamptz default null) returns app.runs
language plpgsql as $$
declare
  r app.runs;
begin
  insert into app.runs (organization_id, id, automation_id, automation_name, version, document, mode, input,
                        project_id, started_by, trigger_id, task_id, started_via, created_at, updated_at)
  select a.organization_id, run_id, a.id, a.name, v.version, v.document, 'live', input, project, started_by, trigger,
         task, via, coalesce(at, app.now()), coalesce(at, app.now())
    from app.automation_versions v
   where v.organization_id = a.organization_id and v.automation_id = a.id and v.version = a.deployed_version
  returning * into r;
  perform app.enqueue('run_automation', jsonb_build_object('organizationId', r.organization_id, 'runId', r.id),
                      'run:' || r.id);
  return r;
end $$;

create or replace function api.run_start(args jsonb) returns jsonb language plpgsql as $$
declare
  a app.automations := app.automation_named(args->>'name');
  run_mode text := coalesce(args->>'mode', 'live');
  key text := args->>'idempotencyKey';
  named_project text := coalesce(args->>'id', args->>'projectId');
  r app.runs;
  project uuid;
begin
  -- A project the caller cannot see is absent (404), whatever else they may lack.
  if named_project is not null then
    perform app.project_for_read(named_project);
  end if;
  if run_mode = 'live' then
    perform app.require_developer('Starting a live run');
  end if;
  if key is not null then
    select * into r from app.runs
     where organization_id = a.organization_id and started_by = app.user_id()
       and automation_name = a.name and idempotency_key = key;
    if r.id is not null then
      return app.run_started_json(r);
    end if;
  end if;
  if a.deployed_version is null then
    perform app.fail('AUTOMATION_NOT_DEPLOYED', 409, 'The automation has no deployed version.',
      jsonb_build_object('name', a.name));
  end if;
  project := app.run_project(a, named_project);

  insert into app.runs (organization_id, automation_id, automation_name, version, document, mode, input,
                        project_id, started_by, idempotency_key)
  select a.organization_id, a.id, a.name, v.version, v.document, run_mode, coalesce(args->'input', '{}'),
         project, app.user_id(), key
    from app.automation_versions v
   where v.organization_id = a.organization_id and v.automation_id = a.id and v.version = a.deployed_version
  on conflict do nothing
  returning * into r;
  -- (An automation deleted meanwhile fails the foreign key: see the handler below.)
  if r.id is null then
    -- The same key started a run concurrently: answer with that run.
    select * into r from app.runs
     where organization_id = a.organization_id and started_by = app.user_id()
       and automation_name = a.name and idempotency_key = key;
    if r.id is null then
      -- Nothing inserted and no run to replay: the version went with a deleted automation.
      perform app.fail('AUTOMATION_NOT_FOUND', 404, 'The automation was deleted.', jsonb_build_object('name', a.name));
    end if;
    return app.run_started_json(r);
  end if;
  perform app.enqueue('run_automation', jsonb_build_object('organizationId', r.organization_id, 'runId', r.id),
                      'run:' || r.id);
  return app.run_started_json(r);
exception when foreign_key_violation then
  perform app.fail('AUTOMATION_NOT_FOUND', 404, 'The automation was deleted.', jsonb_build_object('name', args->>'name'));
end $$;

create or replace function api.runs_list(args jsonb) returns jsonb language plpgsql stable as $$
declare
  a app.automations;
  p app.projects;
  included text[] := coalesce(string_to_array(nullif(args->>'include', ''), ','), '{}');
  page_size integer := app.page_size(args->>'limit', 'page.runs.maxSize');
  byte_budget bigint;
  filters jsonb;
  page_start record;
  rows jsonb;
  positions jsonb[];
  served integer;
begin
  if exists (select 1 from unnest(included) i where i not in ('output', 'trace', 'effects')) then
    perform app.fail('INVALID_QUERY', 400, 'include takes output, trace and effects, comma-separated.',
      jsonb_build_object('issues', jsonb_build_array(jsonb_build_object('path', 'include', 'message', 'unknown part'))));
  end if;
  -- Pages that include outputs, traces or effects are bounded in rows and bytes.
  if cardinality(included) > 0 then
    page_size := least(page_size, app.limit('page.runs.maxSizeWithInclude'));
    byte_budget := app.limit('page.runs.maxBytesWithInclude');
  end if;
  if args->>'id' is not null then
    p := app.project_for_read(args->>'id');
  end if;
  if args->>'name' is not null then
    a := app.automation_named(args->>'name');
  end if;
  filters := jsonb_build_object('projectId', p.id, 'automationId', a.id, 'include', to_jsonb(included));
  page_start := app.keyset_resume(args->>'cursor', 'runs', filters);

  -- Rows in order until the page size, or until the byte budget would be passed
  -- (the first row always fits); the candidate after the last that fits tells
  -- whether another page follows.
  select jsonb_agg(page.body order by page.n) filter (where page.fits),
         array_agg(app.keyset_position(page.created_at, page.id) order by page.n),
         count(*) filter (where page.fits)
    into rows, positions, served
  from (
    select sized.*, sized.n <= page_size and (sized.n = 1 or byte_budget is null or sized.running_bytes <= byte_budget) as fits
      from (
        select numbered.*,
               case when byte_budget is not null then sum(octet_length(numbered.body::text)) over (order by numbered.n) end
                 as running_bytes
          from (
            select r.created_at, r.id, app.run_json(r, false, included) as body,
                   row_number() over (order by r.created_at desc, r.id desc) as n
              from app.runs r
             where r.organization_id = app.org_id()
               and (p.id is null or r.project_id = p.id)
               and (a.id is null or r.automation_id = a.id)
               and (r.created_at, r.id) < (page_start.after_created, page_start.after_id)
             order by r.created_at desc, r.id desc
             limit page_size + 1
          ) numbered
      ) sized
  ) page;
  return app.keyset_page('runs', 'runs', filters, served, rows, positions);
end $$;

create or replace function api.run_get(args jsonb) returns jsonb language plpgsql stable as $$
declare
  r app.runs := app.run_visible(args->>'runId', args->>'id');
  body jsonb := app.run_json(r, true);
  wanted text[];
  unknown text[];
begin
  if args->>'fields' is null then
    return body;
  end if;
  wanted := array(select btrim(f) from unnest(string_to_array(args->>'fields', ',')) f where btrim(f) <> '');
  -- Every key a run can have, whether or not this run has a value for it.
  unknown := array(select f from unnest(wanted) f
                    where f not in ('runId', 'name', 'version', 'mode', 'status', 'waitingFor', 'detail', 'projectId',
                                    'startedBy', 'startedVia', 'createdAt', 'startedAt', 'finishedAt', 'failureCode',
                                    'input', 'output', 'trace', 'effects'));
  if cardinality(wanted) = 0 or cardinality(unknown) > 0 then
    perform app.fail('INVALID_QUERY', 400, 'fields names run keys, comma-separated.',
      jsonb_build_object('issues', jsonb_build_array(jsonb_build_object('path', 'fields',
        'message', 'unknown keys: ' || coalesce(array_to_string(unknown, ', '), '')))));
  end if;
  return (select jsonb_object_agg(f, coalesce(body->f, 'null'::jsonb)) from unnest(wanted) f);
end $$;

create or replace function api.run_cancel(args jsonb) returns jsonb language plpgsql as $$
declare
  r app.runs := app.run_visible(args->>'runId', args->>'id');
begin
  perform app.require_developer('Cancelling a run');
  r := app.run_for_change(r);
  if not app.run_is_live(r.status) then
    perform app.fail('RUN_FINISHED', 409, format('The run already finished (%s).', r.status),
      jsonb_build_object('status', r.status));
  end if;
  if r.status = 'running' then
    -- A step is in flight: the engine stops at the next step boundary.
    update app.runs set cancel_requested_at = coalesce(cancel_requested_at, app.now()), updated_at = app.now()
     where organization_id = r.organization_id and id = r.id returning * into r;
  else
    update app.runs set status = 'cancelled', waiting_for = null, cancel_requested_at = app.now(),
                        finished_at = app.now(), updated_at = app.now()
     where organization_id = r.organization_id and id = r.id returning * into r;
    perform app.run_void_waits(r);
  end if;
  perform app.audit('run.cancelled', 'run', r.id::text, jsonb_build_object('name', r.automation_name));
  return jsonb_build_object('runId', r.id, 'status', r.status, 'cancelRequested', true);
end $$;

create or replace function api.run_delete(args jsonb) returns jsonb language plpgsql as $$
declare
  r app.runs := app.run_visible(args->>'runId', args->>'id');
begin
  perform app.require_developer('Deleting a run');
  if app.run_is_live(r.status) then
    perform app.fail('RUN_IN_FLIGHT', 409, 'The run is still live; cancel it first.', jsonb_build_object('status', r.status));
  end if;
  delete from app.runs where organization_id = r.organization_id and id = r.id;
  perform app.audit('run.deleted', 'run', r.id::text, jsonb_build_object('name', r.automation_name));
  return null;
end $$;

grant execute on function app.run_is_live, app.run_started_json, app.run_json, app.run_visible, app.run_for_change,
  app.automation_install_projects, app.run_project, app.run_begin, api.run_start, api.runs_list, api.run_get, api.run_cancel,
  api.run_delete to api;
