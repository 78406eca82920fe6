-- Platform writes of a live run's action steps (task.create, task.comment,
-- contact.upsert), on the worker's connection: under the run's organization and
-- project (contacts are the organization's, in no project), by the same rules as the
-- REST operations, attributed to the run. The step being executed is the run's
-- seq, which only a commit advances, so a step the worker repeats after a crash
-- addresses the same task and the same comment again instead of writing twice.

-- The project a run's action writes to: the run's own, else the one its params name
-- (an organization-wide run); active and of the run's organization. An
-- organization-wide run reaches only where a start in that project would have been
-- allowed: a project the automation is installed in, or one the person the run acts
-- for may write to (who started it, or who bound the trigger that started it).
-- Anywhere else is as absent as it would be over REST.
create or replace function app.run_action_project(r app.runs, named text) returns app.projects language plpgsql stable as $$
declare
  p app.projects;
begin
  if r.project_id is not null and named is not null and app.as_uuid(named) is distinct from r.project_id then
    perform app.fail('INVALID_BODY', 400, 'A run in a project writes to its own project only.');
  end if;
  select * into p from app.projects
   where organization_id = r.organization_id and id = coalesce(r.project_id, app.as_uuid(named));
  if r.project_id is null and p.id is not null
     and not exists (select 1 from app.automation_installs i
                      where i.organization_id = r.organization_id and i.automation_id = r.automation_id and i.project_id = p.id)
     and not app.member_can_edit_project(r.organization_id,
               coalesce(r.started_by, (select bound_by from app.automation_triggers where id = r.trigger_id)), p.id) then
    p := null;
  end if;
  if p.id is null then
    perform app.fail('INVALID_BODY', 400, case when named is null and r.project_id is null
      then 'An organization-wide run names the project in params.projectId.' else 'No such project.' end);
  end if;
  if p.archived_at is not null then
    perform app.fail('INVALID_BODY', 400, 'The project is archived.');
  end if;
  return p;
end $$;

-- The task a task.comment step comments on: params.taskId, else the task of
-- (externalSystem, externalId) in the run's project, else the task that started the run.
create or replace function app.run_action_task(r app.runs, p app.projects, params jsonb) returns app.tasks
language plpgsql stable as $$
declare
  t app.tasks;
begin
  if params->>'taskId' is not null then
    select * into t from app.tasks where organization_id = p.organization_id and project_id = p.id and id = app.as_uuid(params->>'taskId');
  elsif params->>'externalId' is not null then
    select * into t from app.tasks
     where organization_id = p.organization_id and project_id = p.id
       and external_system = coalesce(app.clean_identifier(params->>'externalSystem'), 'automation')
       and external_id = app.clean_identifier(params->>'externalId');
  else
    select * into t from app.tasks where organization_id = p.organization_id and project_id = p.id and id = r.task_id;
  end if;
  if t.id is null then
    perform app.fail('INVALID_BODY', 400, 'No such task in the run''s project (name it by taskId or externalId).');
  end if;
  return t;
end $$;

-- Performs one action of a running run. Answers {output, effect} on success, or
-- {error} with what refused it; nothing is written on a refusal.
create or replace function app.worker_action(organization uuid, run uuid, action text, params jsonb)
returns jsonb language plpgsql as $$
declare
  r app.runs;
  p app.projects;
  t app.tasks;
  c app.task_comments;
  upserted record;
  contact record;
  place text;
begin
  select * into r from app.runs where organization_id = organization and id = run;
  if r.id is null or r.status <> 'running' then
    return jsonb_build_object('error', 'the run is no longer running');
  end if;
  place := r.id || ':' || r.seq;
  -- The rules read the organization from the caller's context; a run has no user.
  perform set_config('app.org_id', r.organization_id::text, true);
  perform set_config('app.user_id', '', true);
  perform set_config('app.run_id', r.id::text, true);
  if action not in ('task.create', 'task.comment', 'contact.upsert') then
    return jsonb_build_object('error', format('the action %s is not available in this deployment', action));
  end if;
  begin
    -- By externalId, else by email (db/functions/0140_contacts.sql); a step repeated
    -- after a crash finds the contact it wrote and changes nothing.
    if action = 'contact.upsert' then
      contact := app.contact_upsert(params, 'automation', r.id, true);
      return jsonb_build_object(
        'output', jsonb_build_object('contactId', (contact.c).id, 'created', contact.created, 'contact', app.contact_json(contact.c)),
        'effect', jsonb_build_object('type', 'contact.upsert', 'contactId', (contact.c).id, 'created', contact.created,
                                     'changed', contact.changed));
    end if;
    p := app.run_action_project(r, params->>'projectId');
    if action = 'task.create' then
      upserted := app.task_upsert(p, jsonb_build_object('externalSystem', 'automation', 'externalId', place)
                                     || (params - 'projectId'), 'automation', r.id);
      t := upserted.t;
      return jsonb_build_object(
        'output', jsonb_build_object('taskId', t.id, 'created', upserted.created, 'identifier', app.task_identifier(t),
                                     'status', t.status, 'projectId', t.project_id),
        'effect', jsonb_build_object('type', 'task.create', 'taskId', t.id, 'projectId', t.project_id,
                                     'created', upserted.created));
    elsif action = 'task.comment' then
      t := app.run_action_task(r, p, params);
      c := app.task_comment_add(t, params->>'body', 'automation', r.id, place);
      return jsonb_build_object(
        'output', jsonb_build_object('commentId', c.id, 'taskId', t.id),
        'effect', jsonb_build_object('type', 'task.comment', 'taskId', t.id, 'commentId', c.id, 'projectId', t.project_id));
    end if;
  exception when sqlstate 'TL000' then
    -- A refusal of the rules (an invalid title, a missing folder) fails the step with
    -- its message and code; the subtransaction leaves nothing half-written.
    declare
      message text;
      detail text;
    begin
      get stacked diagnostics message = message_text, detail = pg_exception_detail;
      return jsonb_build_object('error', message, 'code', detail::jsonb->>'code', 'data', detail::jsonb->'data');
    end;
  end;
end $$;
