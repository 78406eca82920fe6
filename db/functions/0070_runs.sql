-- Runs: start, read, list, cancel, delete, and the answers runs wait for. The
-- engine (jobs/engine) walks the step graph; the run's state machine is here:
-- queued -> running -> waiting -> queued ... -> completed | failed | cancelled.

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
revoke execute on function app.automation_install_projects(uuid) from public;
grant execute on function app.automation_install_projects(uuid) to api;

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

create or replace function api.run_start(args jsonb) returns jsonb language plpgsql as $$
declare
  a app.automations := app.automation_named(args->>'name');
  run_mode text := coalesce(args->>'mode', 'live');
  key text := args->>'idempotencyKey';
  r app.runs;
  project uuid;
begin
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
  project := app.run_project(a, coalesce(args->>'id', args->>'projectId'));

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
  page_size integer := app.page_size(args->>'limit', 200);
  -- With include a page holds at most 25 rows and 8 MiB.
  byte_budget bigint := 8 * 1024 * 1024;
  filters jsonb;
  after_created timestamptz;
  after_id uuid;
  rows jsonb;
  last_position jsonb;
  more boolean;
begin
  if exists (select 1 from unnest(included) i where i not in ('output', 'trace', 'effects')) then
    perform app.fail('INVALID_QUERY', 400, 'include takes output, trace and effects, comma-separated.',
      jsonb_build_object('issues', jsonb_build_array(jsonb_build_object('path', 'include', 'message', 'unknown part'))));
  end if;
  if cardinality(included) > 0 then
    page_size := least(page_size, 25);
  end if;
  if args->>'id' is not null then
    p := app.project_for_read(args->>'id');
  end if;
  if args->>'name' is not null then
    a := app.automation_named(args->>'name');
  end if;
  filters := jsonb_build_object('projectId', p.id, 'automationId', a.id, 'include', to_jsonb(included));
  select r.after_created, r.after_id into after_created, after_id from app.keyset_resume(args->>'cursor', 'runs', filters) r;

  -- Rows in order until the page size, or until the byte budget would be passed
  -- (the first row always fits); one row more tells whether another page follows.
  select coalesce(jsonb_agg(page.body order by page.n) filter (where page.fits), '[]'),
         count(*) filter (where not page.fits) > 0,
         (array_agg(app.keyset_position(page.created_at, page.id) order by page.n desc) filter (where page.fits))[1]
    into rows, more, last_position
  from (
    select sized.*, sized.n <= page_size and (sized.n = 1 or sized.running_bytes <= byte_budget) as fits
      from (
        select numbered.*, sum(octet_length(numbered.body::text)) over (order by numbered.n) as running_bytes
          from (
            select r.created_at, r.id, app.run_json(r, false, included) as body,
                   row_number() over (order by r.created_at desc, r.id desc) as n
              from app.runs r
             where r.organization_id = app.org_id()
               and (p.id is null or r.project_id = p.id)
               and (a.id is null or r.automation_id = a.id)
               and (r.created_at, r.id) < (after_created, after_id)
             order by r.created_at desc, r.id desc
             limit page_size + 1
          ) numbered
      ) sized
  ) page;
  return app.keyset_page('runs', rows, more, 'runs', filters, last_position);
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

-- Approvals and questions of a run that stops waiting are void.
create or replace function app.run_void_waits(r app.runs) returns void language sql as $$
  update app.run_approvals set status = 'void' where organization_id = r.organization_id and run_id = r.id and status = 'pending';
  update app.run_asks set status = 'void' where organization_id = r.organization_id and run_id = r.id and status = 'open';
$$;

create or replace function api.run_cancel(args jsonb) returns jsonb language plpgsql as $$
declare
  r app.runs := app.run_visible(args->>'runId', args->>'id');
begin
  perform app.require_developer('Cancelling a run');
  select * into r from app.runs where organization_id = r.organization_id and id = r.id for update;
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

-- Resumes a parked run at the port an answer chose; the engine picks it up.
create or replace function app.run_resume(r app.runs, slug text, port text, step_output jsonb) returns void
language plpgsql as $$
begin
  update app.runs
     set status = 'queued', waiting_for = null, detail = null, resume_at = null, updated_at = app.now(),
         state = state || jsonb_build_object('resume', jsonb_build_object('slug', slug, 'port', port, 'output', step_output))
   where organization_id = r.organization_id and id = r.id;
  perform app.enqueue('run_automation', jsonb_build_object('organizationId', r.organization_id, 'runId', r.id),
                      'run:' || r.id);
end $$;

-- MCP run_decide_approval and POST .../runs/{runId}/approvals/{approvalId}.
create or replace function api.run_decide_approval(args jsonb) returns jsonb language plpgsql as $$
declare
  r app.runs := app.run_visible(args->>'runId', args->>'id');
  approval app.run_approvals;
  decision text := args->>'decision';
begin
  select * into r from app.runs where organization_id = r.organization_id and id = r.id for update;
  select * into approval from app.run_approvals
   where organization_id = r.organization_id and run_id = r.id and id = app.as_uuid(args->>'approvalId')
   for update;
  if approval.id is null then
    perform app.fail('NOT_FOUND', 404, 'No such approval on this run.');
  end if;
  if approval.status <> 'pending' or r.status <> 'waiting' or r.waiting_for <> 'approval' then
    perform app.fail('APPROVAL_DECIDED', 409, 'This approval is no longer pending.',
      jsonb_build_object('status', approval.status));
  end if;
  update app.run_approvals
     set status = decision, comment = args->>'comment', decided_by = app.user_id(), decided_at = app.now()
   where organization_id = approval.organization_id and id = approval.id;
  perform app.run_resume(r, approval.step_slug, decision,
    jsonb_build_object('decision', decision, 'comment', args->>'comment', 'decidedBy', app.user_id()));
  perform app.audit('run.approval.decided', 'run', r.id::text,
    jsonb_build_object('approvalId', approval.id, 'decision', decision));
  return jsonb_build_object('runId', r.id, 'approvalId', approval.id, 'decision', decision, 'status', 'queued');
end $$;

create or replace function app.ask_json(q app.run_asks) returns jsonb language sql stable as $$
  select jsonb_build_object('askId', q.id, 'runId', q.run_id, 'step', q.step_slug, 'question', q.question,
                            'fields', q.fields, 'createdAt', app.ms(q.created_at))
$$;

create or replace function api.run_ask(args jsonb) returns jsonb language plpgsql stable as $$
declare
  r app.runs := app.run_visible(args->>'runId', args->>'id');
  q app.run_asks;
begin
  select * into q from app.run_asks
   where organization_id = r.organization_id and run_id = r.id and status = 'open'
   order by created_at desc limit 1;
  if q.id is null or r.status <> 'waiting' or r.waiting_for <> 'ask' then
    perform app.fail('NOT_FOUND', 404, 'The run is not waiting for an answer.', jsonb_build_object('status', r.status));
  end if;
  return app.ask_json(q);
end $$;

-- An answer must give every required field, each of its declared type, and no other.
create or replace function app.ask_answer_issues(fields jsonb, answer jsonb) returns jsonb language sql immutable as $$
  select coalesce(jsonb_agg(issue), '[]') from (
    select jsonb_build_object('path', 'answer.' || (f->>'name'), 'message', 'is required') as issue
      from jsonb_array_elements(fields) f
     where coalesce((f->>'required')::boolean, false) and not answer ? (f->>'name')
    union all
    select jsonb_build_object('path', 'answer.' || (f->>'name'), 'message', 'must be a ' || coalesce(f->>'type', 'string'))
      from jsonb_array_elements(fields) f
     where answer ? (f->>'name') and jsonb_typeof(answer->(f->>'name')) <> coalesce(f->>'type', 'string')
    union all
    select jsonb_build_object('path', 'answer.' || k, 'message', 'is not a field of this question')
      from jsonb_object_keys(answer) k
     where not exists (select 1 from jsonb_array_elements(fields) f where f->>'name' = k)
  ) problems
$$;

create or replace function api.run_answer_ask(args jsonb) returns jsonb language plpgsql as $$
declare
  r app.runs := app.run_visible(args->>'runId', args->>'id');
  q app.run_asks;
  issues jsonb;
begin
  if args->>'actor' is not null and not (app.capabilities()->>'actAs')::boolean then
    perform app.fail('ROLE_FORBIDDEN', 403, 'Answering as another actor needs the act-as capability.');
  end if;
  select * into r from app.runs where organization_id = r.organization_id and id = r.id for update;
  select * into q from app.run_asks
   where organization_id = r.organization_id and run_id = r.id and id = app.as_uuid(args->>'askId') for update;
  if q.id is null then
    perform app.fail('NOT_FOUND', 404, 'No such question on this run.');
  end if;
  if q.status <> 'open' or r.status <> 'waiting' or r.waiting_for <> 'ask' then
    perform app.fail('ASK_ANSWERED', 409, 'This question is no longer open.', jsonb_build_object('status', q.status));
  end if;
  issues := app.ask_answer_issues(q.fields, coalesce(args->'answer', '{}'));
  if jsonb_array_length(issues) > 0 then
    perform app.fail('INVALID_BODY', 400, 'The answer does not match the question''s fields.', jsonb_build_object('issues', issues));
  end if;
  update app.run_asks
     set status = 'answered', answer = args->'answer', answered_by = app.user_id(), actor = args->>'actor',
         answered_at = app.now()
   where organization_id = q.organization_id and id = q.id;
  perform app.run_resume(r, q.step_slug, 'success', args->'answer');
  return jsonb_build_object('runId', r.id, 'askId', q.id, 'status', 'queued');
end $$;

-- The engine's side (worker, owner connection).

-- Takes a run for execution: null when there is nothing to do (finished, parked and
-- not due, cancelled meanwhile). Starts the timeout clock, or resumes it after a wait.
create or replace function app.worker_run_claim(organization uuid, run uuid) returns jsonb language plpgsql as $$
declare
  r app.runs;
  timeout_ms bigint;
begin
  select * into r from app.runs where organization_id = organization and id = run for update;
  if r.id is null or not app.run_is_live(r.status) then
    return null;
  end if;
  if r.status = 'waiting' and not (r.waiting_for = 'repeat' and r.resume_at <= app.now()) then
    return null;
  end if;
  if r.cancel_requested_at is not null then
    update app.runs set status = 'cancelled', waiting_for = null, finished_at = app.now(), updated_at = app.now()
     where organization_id = r.organization_id and id = r.id returning * into r;
    perform app.run_void_waits(r);
    return null;
  end if;
  timeout_ms := coalesce((r.document->'config'->>'timeoutMs')::bigint, 900000);
  update app.runs
     set status = 'running', waiting_for = null, detail = null, resume_at = null,
         started_at = coalesce(started_at, app.now()),
         deadline_at = case when deadline_at is null then app.now() + timeout_ms * interval '1 millisecond'
                            when state ? 'remainingMs' then app.now() + (state->>'remainingMs')::bigint * interval '1 millisecond'
                            else deadline_at end,
         state = state - 'remainingMs',
         heartbeat_at = clock_timestamp(), updated_at = app.now()
   where organization_id = r.organization_id and id = r.id
  returning * into r;
  if r.deadline_at <= app.now() then
    update app.runs set status = 'failed', failure_code = 'timeout', finished_at = app.now(),
                        detail = 'The run exceeded its timeout.'
     where organization_id = r.organization_id and id = r.id;
    return null;
  end if;
  return jsonb_build_object('run', to_jsonb(r) - 'trace' - 'effects',
    'secrets', coalesce((select jsonb_object_agg(s.name, s.value) from app.secrets s where s.organization_id = r.organization_id), '{}'),
    -- The organization's catalog, with what calling each model needs.
    'models', coalesce((select jsonb_agg(jsonb_build_object('id', c.id, 'providerSlug', c.provider_slug,
                                    'maxOutputTokens', c.max_output_tokens, 'baseUrl', p.base_url, 'apiKey', p.api_key))
                          from app.model_catalog(r.organization_id) c
                          left join app.model_providers p on p.organization_id = r.organization_id and p.slug = c.provider_slug), '[]'),
    'timedOutAt', app.ms(r.deadline_at));
end $$;

-- Commits one step: its trace entry and effects, the engine state, and the outcome.
-- A commit from a worker that lost the run (seq moved on, or the run is no longer
-- running) changes nothing. Returns the run's status afterwards.
create or replace function app.worker_run_commit(organization uuid, run uuid, expected_seq integer, step jsonb)
returns text language plpgsql as $$
declare
  r app.runs;
  outcome text := step->>'outcome';
  wait_id uuid;
begin
  select * into r from app.runs where organization_id = organization and id = run for update;
  if r.id is null or r.status <> 'running' or r.seq <> expected_seq then
    -- Another worker holds the run now (or it finished): this one must stop.
    return 'lost';
  end if;
  update app.runs
     set trace = trace || coalesce(step->'trace', '[]'),
         effects = effects || coalesce(step->'effects', '[]'),
         state = coalesce(step->'state', state) - 'resume',
         seq = seq + 1, heartbeat_at = clock_timestamp(), updated_at = app.now()
   where organization_id = r.organization_id and id = r.id
  returning * into r;

  if outcome = 'continue' and r.deadline_at <= app.now() then
    outcome := 'fail';
    step := step || jsonb_build_object('failureCode', 'timeout', 'detail', 'The run exceeded its timeout.');
  end if;
  if outcome in ('continue', 'park') and r.cancel_requested_at is not null then
    update app.runs set status = 'cancelled', finished_at = app.now() where organization_id = r.organization_id and id = r.id;
    return 'cancelled';
  end if;
  if outcome = 'continue' then
    if r.cancel_requested_at is not null then
      update app.runs set status = 'cancelled', finished_at = app.now() where organization_id = r.organization_id and id = r.id;
      return 'cancelled';
    end if;
    return 'running';
  elsif outcome = 'park' then
    if step->>'waitingFor' = 'approval' then
      insert into app.run_approvals (organization_id, run_id, step_slug, title)
      values (r.organization_id, r.id, step->'wait'->>'slug', step->'wait'->>'title') returning id into wait_id;
    elsif step->>'waitingFor' = 'ask' then
      insert into app.run_asks (organization_id, run_id, step_slug, question, fields)
      values (r.organization_id, r.id, step->'wait'->>'slug', step->'wait'->>'question', coalesce(step->'wait'->'fields', '[]'))
      returning id into wait_id;
    end if;
    update app.runs
       set status = 'waiting', waiting_for = step->>'waitingFor',
           detail = case when wait_id is not null then (step->>'waitingFor') || ':' || wait_id else step->>'detail' end,
           resume_at = app.now() + coalesce((step->>'resumeAfterMs')::bigint, 0) * interval '1 millisecond',
           state = state || jsonb_build_object('remainingMs',
             greatest(0, (extract(epoch from r.deadline_at - app.now()) * 1000)::bigint))
     where organization_id = r.organization_id and id = r.id;
    if step->>'waitingFor' = 'repeat' then
      perform app.enqueue('run_automation', jsonb_build_object('organizationId', r.organization_id, 'runId', r.id),
                          'run:' || r.id, coalesce((step->>'resumeAfterMs')::bigint, 0) * interval '1 millisecond');
    end if;
    return 'waiting';
  elsif outcome = 'complete' then
    update app.runs set status = 'completed', output = step->'output', finished_at = app.now()
     where organization_id = r.organization_id and id = r.id;
    return 'completed';
  else
    update app.runs set status = 'failed', failure_code = coalesce(step->>'failureCode', 'internal_error'),
                        detail = step->>'detail', finished_at = app.now()
     where organization_id = r.organization_id and id = r.id;
    return 'failed';
  end if;
end $$;

-- A worker busy with a long step shows it is alive (seq guards a run it lost).
create or replace function app.worker_run_heartbeat(organization uuid, run uuid, expected_seq integer) returns boolean
language sql as $$
  with beat as (
    update app.runs set heartbeat_at = clock_timestamp()
     where organization_id = organization and id = run and status = 'running' and seq = expected_seq
    returning 1
  ) select exists (select 1 from beat)
$$;

-- Live runs whose worker stopped showing life (killed mid-step) are queued again;
-- the engine repeats at most the step that was in flight.
create or replace function app.worker_recover_runs(stale interval) returns integer language plpgsql as $$
declare
  r record;
  n integer := 0;
begin
  for r in
    select organization_id, id from app.runs
     where (status = 'running' and heartbeat_at < clock_timestamp() - stale)
        -- Queued with no job, or with one locked by a worker that has since died.
        or (status = 'queued' and updated_at < app.now() - stale
            and not exists (select 1 from graphile_worker.jobs j
                             where j.key = 'run:' || runs.id and (j.locked_at is null or j.locked_at > clock_timestamp() - stale)))
     for update skip locked
  loop
    update app.runs set status = 'queued', heartbeat_at = null where organization_id = r.organization_id and id = r.id;
    perform app.enqueue('run_automation', jsonb_build_object('organizationId', r.organization_id, 'runId', r.id),
                        'run:' || r.id);
    n := n + 1;
  end loop;
  return n;
end $$;

revoke execute on function app.worker_run_claim(uuid, uuid) from public;
revoke execute on function app.worker_run_commit(uuid, uuid, integer, jsonb) from public;
revoke execute on function app.worker_recover_runs(interval) from public;
revoke execute on function app.worker_run_heartbeat(uuid, uuid, integer) from public;
