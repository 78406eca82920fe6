-- Tasks: create by natural key (a repeat updates), read, list, board moves, workflow
-- starts and review. The same rules serve a person's key (api.task_*) and a run's
-- action step (app.worker_action, db/functions/0092_task_actions.sql); `actor` says
-- which: 'person' or 'automation'.

-- Source systems whose item state never moves the board.
create or replace function app.task_mirror_ignored(system text) returns boolean language sql immutable as $$
  select lower(system) in ('github', 'glitchtip')
$$;

-- Where the source item's state moves a task (SPEC "Task status"). It moves only on a
-- change of that state: a sync repeating the state it sent before leaves a task where
-- the board put it, so a move through the board ends the mirror's claim on its park.
-- A new task's stored state is none, so a task created closed is parked at once.
create or replace function app.task_mirror_move(status text, set_by text, system text, old_state text,
  new_state text, actor text, out next_status text, out next_set_by text) language plpgsql immutable as $$
begin
  next_status := status;
  next_set_by := set_by;
  if new_state is null or new_state is not distinct from old_state or app.task_mirror_ignored(system)
     or status = 'cancelled' then
    return;
  end if;
  if new_state = 'closed' then
    if actor = 'automation' then
      -- Only the workflow engine itself lands a close at done.
      next_status := 'done';
      next_set_by := 'automation';
    elsif not (status = 'in_review' and set_by in ('person', 'agent')) then
      next_status := 'in_review';
      next_set_by := 'mirror';
    end if;
  elsif (status = 'in_review' and set_by = 'mirror') or status = 'done' then
    next_status := 'backlog';
    next_set_by := 'mirror';
  end if;
end $$;

create or replace function app.task_identifier(t app.tasks) returns text language sql stable as $$
  select p.key || '-' || t.number from app.projects p
   where p.organization_id = t.organization_id and p.id = t.project_id and p.key is not null
$$;

create or replace function app.task_label_names(t app.tasks) returns jsonb language sql stable as $$
  select coalesce(jsonb_agg(l.name order by u.ord), '[]')
    from unnest(t.label_ids) with ordinality u(id, ord)
    join app.task_labels l on l.organization_id = t.organization_id and l.id = u.id
$$;

create or replace function app.task_assignee_json(t app.tasks) returns jsonb language sql stable as $$
  select case
    when t.assignee_user_id is not null then
      (select jsonb_build_object('type', 'user', 'id', u.id, 'name', u.name) from app.users u where u.id = t.assignee_user_id)
    when t.assignee_automation_id is not null then
      (select jsonb_build_object('type', 'automation', 'name', a.name) from app.automations a
        where a.organization_id = t.organization_id and a.id = t.assignee_automation_id)
  end
$$;

create or replace function app.task_json(t app.tasks) returns jsonb language sql stable as $$
  select jsonb_build_object(
      'id', t.id, 'projectId', t.project_id, 'identifier', app.task_identifier(t), 'number', t.number,
      'externalSystem', t.external_system, 'externalId', t.external_id, 'title', t.title,
      'description', t.description, 'labels', app.task_label_names(t), 'externalUrl', t.external_url,
      'externalState', t.external_state, 'status', t.status, 'assignee', app.task_assignee_json(t),
      'createdAt', app.ms(t.created_at), 'updatedAt', app.ms(t.updated_at))
    || case when t.archived_at is null then '{}'::jsonb else jsonb_build_object('archivedAt', app.ms(t.archived_at)) end
    || case when t.review_requested_at is null then '{}'::jsonb
            else jsonb_build_object('review', jsonb_strip_nulls(jsonb_build_object(
              'requestedAt', app.ms(t.review_requested_at), 'requestedBy', t.review_requested_by,
              'actor', t.review_actor))) end
$$;

-- What an event or a run input says of a task.
create or replace function app.task_brief(t app.tasks) returns jsonb language sql stable as $$
  select jsonb_build_object('id', t.id, 'projectId', t.project_id, 'identifier', app.task_identifier(t),
    'title', t.title, 'status', t.status, 'externalSystem', t.external_system, 'externalId', t.external_id)
$$;

-- A length problem of a field, or nothing.
create or replace function app.units_issue(path text, value text, max_units numeric) returns jsonb
language sql immutable as $$
  select case when value is not null and app.utf16_length(value) > max_units then
    jsonb_build_array(jsonb_build_object('path', path, 'message', format('at most %s UTF-16 code units', max_units))) else '[]' end
$$;

-- Every problem of a task's fields at once, each with its path. The server's shape
-- checks find the same first; this holds the rules for every other caller (a run's
-- action step) too.
create or replace function app.task_issues(args jsonb) returns jsonb language plpgsql stable as $$
declare
  issues jsonb := '[]';
  field text;
  label jsonb;
  i integer := 0;
begin
  foreach field in array array['externalSystem', 'externalId', 'title'] loop
    if jsonb_typeof(args->field) is distinct from 'string' or app.clean_identifier(args->>field) is null then
      issues := issues || jsonb_build_array(jsonb_build_object('path', field, 'message', 'required, not blank'));
    end if;
  end loop;
  issues := issues
    || app.units_issue('externalSystem', app.clean_identifier(args->>'externalSystem'), app.limit('task.externalKeyMaxUnits'))
    || app.units_issue('externalId', app.clean_identifier(args->>'externalId'), app.limit('task.externalKeyMaxUnits'))
    || app.units_issue('title', app.trim_space(args->>'title'), app.limit('task.titleMaxUnits'))
    || app.units_issue('description', args->>'description', app.limit('task.descriptionMaxUnits'));
  if args ? 'labels' and jsonb_typeof(args->'labels') <> 'null' then
    if jsonb_typeof(args->'labels') <> 'array' then
      issues := issues || jsonb_build_array(jsonb_build_object('path', 'labels', 'message', 'must be a list of names'));
    else
      if jsonb_array_length(args->'labels') > app.limit('task.maxLabels') then
        issues := issues || jsonb_build_array(jsonb_build_object('path', 'labels',
          'message', format('at most %s labels', app.limit('task.maxLabels'))));
      end if;
      for label in select value from jsonb_array_elements(args->'labels') loop
        if jsonb_typeof(label) <> 'string' or app.clean_identifier(label #>> '{}') is null then
          issues := issues || jsonb_build_array(jsonb_build_object('path', 'labels.' || i, 'message', 'must be a name, not blank'));
        else
          issues := issues || app.units_issue('labels.' || i, app.clean_identifier(label #>> '{}'), app.limit('task.labelMaxUnits'));
        end if;
        i := i + 1;
      end loop;
    end if;
  end if;
  if args->>'externalUrl' is not null and args->>'externalUrl' !~* '^https?://[^/?#\s@]+([/?#][^\s]*)?$' then
    issues := issues || jsonb_build_array(jsonb_build_object('path', 'externalUrl', 'message', 'must be an absolute http(s) URL'));
  end if;
  if args->>'setupFolderName' is not null and args->>'externalUrl' is not null then
    issues := issues || jsonb_build_array(jsonb_build_object('path', 'setupFolderName',
      'message', 'not allowed together with externalUrl'));
  end if;
  if args->>'externalState' is not null and args->>'externalState' not in ('open', 'closed') then
    issues := issues || jsonb_build_array(jsonb_build_object('path', 'externalState', 'message', 'must be open or closed'));
  end if;
  return issues;
end $$;

-- The project's labels for the names sent, in their order, each once (the first
-- spelling of names equal but for case); names new to the project join its catalog
-- with the spelling sent. New names are inserted in one statement in name order, so
-- two writers adding the same new names never wait on each other crosswise.
create or replace function app.task_label_ids(p app.projects, names jsonb) returns uuid[] language plpgsql as $$
declare
  wanted text[] := array(
    select n from (
      select distinct on (lower(n)) n, ord
        from (select app.clean_identifier(value) as n, ord from jsonb_array_elements_text(names) with ordinality e(value, ord)) s
       order by lower(n), ord) firsts
     order by ord);
  ids uuid[];
begin
  insert into app.task_labels (organization_id, project_id, name)
  select p.organization_id, p.id, w from unnest(wanted) w
   where not exists (select 1 from app.task_labels l
                      where l.organization_id = p.organization_id and l.project_id = p.id and lower(l.name) = lower(w))
   order by lower(w)
  on conflict (organization_id, project_id, lower(name)) do nothing;
  select array_agg(l.id order by u.ord) into ids
    from unnest(wanted) with ordinality u(name, ord)
    join app.task_labels l on l.organization_id = p.organization_id and l.project_id = p.id and lower(l.name) = lower(u.name);
  return coalesce(ids, '{}');
end $$;

create or replace function app.task_next_number(p app.projects) returns integer language sql as $$
  insert into app.task_counters as c (organization_id, project_id, last_number) values (p.organization_id, p.id, 1)
  on conflict (organization_id, project_id) do update set last_number = c.last_number + 1
  returning last_number
$$;

-- The root folder of that name (case-insensitive), or 400 SETUP_FOLDER_MISSING.
create or replace function app.task_setup_folder(p app.projects, folder_name text) returns uuid language plpgsql stable as $$
declare
  found uuid;
begin
  select f.id into found from app.folders f
   where f.organization_id = p.organization_id and f.project_id = p.id and f.parent_id is null
     and lower(f.name) = lower(normalize(app.trim_space(folder_name), nfc));
  if found is null then
    perform app.fail('SETUP_FOLDER_MISSING', 400, 'The project has no root folder of that name.',
      jsonb_build_object('setupFolderName', folder_name));
  end if;
  return found;
end $$;

-- A status moved: the event for a person's move (an automation's or agent's own moves
-- raise nothing), and the time of the move.
create or replace function app.task_status_moved(t app.tasks, previous text, actor text) returns void language plpgsql as $$
begin
  if t.status is distinct from previous then
    perform app.raise_event(t.organization_id, 'task.status_changed',
      jsonb_build_object('task', app.task_brief(t), 'from', previous, 'to', t.status), t.project_id, actor);
  end if;
end $$;

-- What a repeat makes of an active task: title and description always (an omitted
-- description clears it), labels when sent, and the status the source item's state
-- moves it to (SPEC "Repeat creation rules"). Beyond those rules, and mirroring the
-- source item as externalState does: externalUrl when sent, and automationSlug as
-- the assignee of a task that has none, so a sync never displaces someone a person
-- assigned. Only new label names are written.
create or replace function app.task_repeated(t app.tasks, p app.projects, args jsonb, url text, assignee uuid, actor text)
returns app.tasks language plpgsql as $$
declare
  move record := app.task_mirror_move(t.status, t.status_set_by, t.external_system, t.external_state,
                                      args->>'externalState', actor);
begin
  t.title := app.trim_space(args->>'title');
  t.description := args->>'description';
  if jsonb_typeof(args->'labels') = 'array' then
    t.label_ids := app.task_label_ids(p, args->'labels');
  end if;
  t.external_url := coalesce(url, t.external_url);
  if assignee is not null and t.assignee_user_id is null and t.assignee_automation_id is null then
    t.assignee_automation_id := assignee;
  end if;
  t.external_state := coalesce(args->>'externalState', t.external_state);
  t.status := move.next_status;
  t.status_set_by := move.next_set_by;
  return t;
end $$;

-- Create a task by its natural key, or update the task that holds it (SPEC "Repeat
-- creation rules"). Returns the task as stored and whether it was created.
create or replace function app.task_upsert(p app.projects, args jsonb, actor text, run uuid,
  out t app.tasks, out created boolean) language plpgsql as $$
declare
  issues jsonb := app.task_issues(args);
  system text := app.clean_identifier(args->>'externalSystem');
  external text := app.clean_identifier(args->>'externalId');
  new_title text := app.trim_space(args->>'title');
  url text := args->>'externalUrl';
  state text := args->>'externalState';
  assignee app.automations;
  move record;
  -- The task before this repeat (and, on the read path, what the repeat would make of it).
  previous app.tasks;
begin
  if jsonb_array_length(issues) > 0 then
    perform app.fail('INVALID_BODY', 400, 'The task is not valid: ' || (issues->0->>'path') || ' ' || (issues->0->>'message'),
      jsonb_build_object('issues', issues));
  end if;
  if args->>'setupFolderName' is not null then
    url := app.task_setup_folder(p, args->>'setupFolderName')::text;
  end if;
  if args->>'automationSlug' is not null then
    assignee := app.automation_find(args->>'automationSlug');
    if assignee.id is null or assignee.organization_id <> p.organization_id then
      perform app.fail('AUTOMATION_NOT_FOUND', 404, 'No automation of that name to assign.',
        jsonb_build_object('automationSlug', args->>'automationSlug'));
    end if;
  end if;

  created := false;
  -- A sync resends most items unchanged: a repeat that would change nothing answers
  -- from a plain read, without locking or writing the row.
  select * into t from app.tasks
   where organization_id = p.organization_id and project_id = p.id and external_system = system and external_id = external;
  if t.archived_at is not null then
    return;
  elsif t.id is not null then
    previous := app.task_repeated(t, p, args, url, assignee.id, actor);
    if row(previous.*) is not distinct from row(t.*) then
      return;
    end if;
  else
    move := app.task_mirror_move('backlog', null, system, null, state, actor);
    insert into app.tasks (organization_id, project_id, number, external_system, external_id, title, description,
                           label_ids, external_url, external_state, status, status_set_by, status_changed_at,
                           assignee_automation_id, created_by, created_by_run_id)
    values (p.organization_id, p.id, app.task_next_number(p), system, external, new_title, args->>'description',
            case when jsonb_typeof(args->'labels') = 'array' then app.task_label_ids(p, args->'labels') else '{}' end,
            url, state, move.next_status, move.next_set_by,
            case when move.next_set_by is not null then app.now() end, assignee.id, app.user_id(), run)
    on conflict (organization_id, project_id, external_system, external_id) do nothing
    returning * into t;
    if t.id is not null then
      created := true;
      perform app.raise_event(t.organization_id, 'task.created', jsonb_build_object('task', app.task_brief(t)),
                              t.project_id, actor);
      return;
    end if;
    -- The same key was created concurrently: this create is a repeat of it.
  end if;

  -- A repeat that changes the task: locked, and decided again on the row as it is now.
  select * into t from app.tasks
   where organization_id = p.organization_id and project_id = p.id and external_system = system and external_id = external
   for update;
  if t.archived_at is not null then
    return;
  end if;
  previous := t;
  t := app.task_repeated(t, p, args, url, assignee.id, actor);
  if row(t.*) is distinct from row(previous.*) then
    update app.tasks
       set title = t.title, description = t.description, label_ids = t.label_ids, external_url = t.external_url,
           assignee_automation_id = t.assignee_automation_id, assignee_user_id = t.assignee_user_id,
           external_state = t.external_state, status = t.status, status_set_by = t.status_set_by,
           status_changed_at = case when t.status is distinct from previous.status then app.now() else status_changed_at end,
           updated_at = app.now()
     where organization_id = t.organization_id and id = t.id
    returning * into t;
    perform app.task_status_moved(t, previous.status, actor);
  end if;
end $$;

-- A task the caller sees: in the named project, or (the flat routes) wherever it is.
-- 404 for a task that is absent, invisible, or in another project.
create or replace function app.task_visible(task text, project text default null) returns app.tasks
language plpgsql stable as $$
declare
  t app.tasks;
  p app.projects;
begin
  if project is not null then
    p := app.project_for_read(project);
  end if;
  select * into t from app.tasks
   where organization_id = app.org_id() and id = app.as_uuid(task) and (p.id is null or project_id = p.id);
  if t.id is null then
    perform app.fail('NOT_FOUND', 404, 'Task not found.');
  end if;
  return t;
end $$;

-- A workflow started on a task: the automation's deployed version, live, in the task's
-- project, with the task as input. The caller has decided it may start.
create or replace function app.task_run_insert(t app.tasks, a app.automations) returns app.runs language plpgsql as $$
begin
  return app.run_begin(a, t.project_id, jsonb_build_object('trigger', 'task', 'task', app.task_json(t)), app.user_id(),
                       null, 'task', t.id);
end $$;

-- Starts the workflow `slug` on the task, or says why not: {started, runId,
-- executionId, reason?}. Coded refusals (unknown automation, nothing deployed, bound to
-- other projects) are raised; `lenient` answers the first two as not_started instead,
-- as the earlier flat route does.
create or replace function app.task_start(t app.tasks, slug text, lenient boolean) returns jsonb language plpgsql as $$
declare
  a app.automations := app.automation_find(slug);
  installed uuid[];
  live app.runs;
  r app.runs;
begin
  if a.id is null or a.deployed_version is null then
    if lenient then
      return jsonb_build_object('started', false, 'reason', 'not_started', 'runId', null, 'executionId', null);
    elsif a.id is null then
      perform app.fail('AUTOMATION_NOT_FOUND', 404, 'No automation of that name.', jsonb_build_object('workflowSlug', slug));
    end if;
    perform app.fail('AUTOMATION_NOT_DEPLOYED', 409, 'The automation has no deployed version.', jsonb_build_object('name', a.name));
  end if;
  installed := app.automation_install_projects(a.id);
  if cardinality(installed) > 0 and not t.project_id = any (installed) then
    perform app.fail('AUTOMATION_PROJECT_FORBIDDEN', 403, 'The automation is bound to other projects.',
      jsonb_build_object('name', a.name));
  end if;
  -- One start at a time per task, so two racing starts never both run the workflow.
  perform pg_advisory_xact_lock(hashtextextended('task-start:' || t.id, 0));
  select * into live from app.runs
   where organization_id = t.organization_id and task_id = t.id and automation_id = a.id
     and status in ('queued', 'running', 'waiting')
   order by created_at desc limit 1;
  if live.id is not null then
    return jsonb_build_object('started', false, 'reason', 'already_running', 'runId', live.id, 'executionId', live.id);
  end if;
  r := app.task_run_insert(t, a);
  return jsonb_build_object('started', true, 'runId', r.id, 'executionId', r.id);
end $$;

-- Starting needs membership, sight of the task and edit access to its project (never
-- the developer capability), in an active project.
create or replace function app.task_require_start(t app.tasks) returns void language plpgsql stable as $$
begin
  if app.project_access(t.project_id) is distinct from 'edit' then
    perform app.fail('ROLE_FORBIDDEN', 403, 'Starting a workflow on a task needs edit access to its project.');
  end if;
  if exists (select 1 from app.projects p where p.organization_id = t.organization_id and p.id = t.project_id
                and p.archived_at is not null) then
    perform app.fail('PROJECT_ARCHIVED', 403, 'The project is archived; restore it before changing it.');
  end if;
end $$;

create or replace function api.task_create(args jsonb) returns jsonb language plpgsql as $$
declare
  p app.projects := app.project_for_write(args->>'id');
  upserted record;
  started jsonb;
  reply jsonb;
begin
  upserted := app.task_upsert(p, args, 'person', null);
  reply := jsonb_build_object('task', jsonb_build_object('id', (upserted.t).id, 'created', upserted.created));
  if args ? 'runWorkflowSlug' then
    if upserted.created and args->>'runWorkflowSlug' is not null then
      begin
        started := app.task_start(upserted.t, args->>'runWorkflowSlug', true);
      exception when others then
        -- The task is saved whatever the start answers: a start that fails leaves no run.
        started := null;
      end;
    end if;
    reply := reply || jsonb_build_object('runId', started->'runId', 'executionId', started->'runId');
  end if;
  return reply;
end $$;

create or replace function api.task_get(args jsonb) returns jsonb language plpgsql stable as $$
begin
  return jsonb_build_object('task', app.task_json(app.task_visible(args->>'taskId', args->>'id')));
end $$;

-- A project's tasks newest first, filtered by status or by the natural key.
create or replace function api.tasks_list(args jsonb) returns jsonb language plpgsql stable as $$
declare
  p app.projects := app.project_for_read(args->>'id');
  page_size integer := app.page_size(args->>'limit', 'page.tasks.maxSize');
  filters jsonb := jsonb_strip_nulls(jsonb_build_object('projectId', p.id, 'status', args->>'status',
    'externalSystem', app.clean_identifier(args->>'externalSystem'), 'externalId', app.clean_identifier(args->>'externalId'),
    'archived', coalesce(args->>'archived', 'exclude')));
  page_start record := app.keyset_resume(args->>'cursor', 'tasks', filters);
  rows jsonb;
  positions jsonb[];
begin
  select jsonb_agg(app.task_json(c) order by c.created_at desc, c.id desc),
         array_agg(app.keyset_position(c.created_at, c.id) order by c.created_at desc, c.id desc)
    into rows, positions
    from (select * from app.tasks t
           where t.organization_id = p.organization_id and t.project_id = p.id
             and (t.created_at, t.id) < (page_start.after_created, page_start.after_id)
             and (filters->>'status' is null or t.status = filters->>'status')
             and (filters->>'externalSystem' is null or t.external_system = filters->>'externalSystem')
             and (filters->>'externalId' is null or t.external_id = filters->>'externalId')
             and case filters->>'archived' when 'only' then t.archived_at is not null
                                           when 'include' then true else t.archived_at is null end
           order by t.created_at desc, t.id desc
           limit page_size + 1) c;
  -- The deprecated `cursor` twin belongs to the project and file lists only.
  return app.keyset_page('tasks', 'tasks', filters, page_size, rows, positions) - 'cursor';
end $$;

-- A person's change through the board: status (ending the mirror's claim on its park),
-- archive or restore, assignee.
create or replace function api.task_update(args jsonb) returns jsonb language plpgsql as $$
declare
  p app.projects := app.project_for_write(args->>'id');
  t app.tasks := app.task_visible(args->>'taskId', p.id::text);
  previous app.tasks;
  assignee jsonb := args->'assignee';
  automation app.automations;
begin
  select * into t from app.tasks where organization_id = t.organization_id and id = t.id for update;
  previous := t;
  if args ? 'status' then
    t.status := args->>'status';
    t.status_set_by := 'person';
  end if;
  if args ? 'archived' then
    t.archived_at := case when (args->>'archived')::boolean then coalesce(t.archived_at, app.now()) end;
  end if;
  if args ? 'assignee' then
    t.assignee_user_id := null;
    t.assignee_automation_id := null;
    if assignee->>'type' = 'user' then
      t.assignee_user_id := (select m.user_id from app.memberships m
                              where m.organization_id = t.organization_id and m.user_id = app.as_uuid(assignee->>'id')
                                and not m.disabled);
      if t.assignee_user_id is null then
        perform app.invalid_body('assignee.id', 'must be an active member of the organization');
      end if;
    elsif assignee->>'type' = 'automation' then
      automation := app.automation_named(assignee->>'name');
      t.assignee_automation_id := automation.id;
    end if;
  end if;
  update app.tasks
     set status = t.status, status_set_by = t.status_set_by, archived_at = t.archived_at,
         assignee_user_id = t.assignee_user_id, assignee_automation_id = t.assignee_automation_id,
         status_changed_at = case when t.status is distinct from previous.status then app.now() else status_changed_at end,
         updated_at = app.now()
   where organization_id = t.organization_id and id = t.id
  returning * into t;
  perform app.task_status_moved(t, previous.status, 'person');
  if t.assignee_user_id is not null and t.assignee_user_id is distinct from previous.assignee_user_id then
    perform app.task_notify(t, t.assignee_user_id, 'task.assigned',
      jsonb_build_object('assignedByName', (select u.name from app.users u where u.id = app.user_id())));
  end if;
  return jsonb_build_object('task', app.task_json(t));
end $$;

-- POST .../start: the project route answers unknown and undeployed workflows with
-- their codes; the flat route (args.flat) answers them started:false, not_started.
create or replace function api.task_start(args jsonb) returns jsonb language plpgsql as $$
declare
  t app.tasks := app.task_visible(args->>'taskId', args->>'id');
begin
  perform app.task_require_start(t);
  return app.task_start(t, args->>'workflowSlug', coalesce((args->>'flat')::boolean, false));
end $$;

-- Review: the task parks at in_review by a person's hand (kept when the source item
-- reopens), optionally for an actor named by a caller who may act as others.
create or replace function api.task_review(args jsonb) returns jsonb language plpgsql as $$
declare
  p app.projects := app.project_for_write(args->>'id');
  t app.tasks := app.task_visible(args->>'taskId', p.id::text);
  previous text;
begin
  if args->>'actor' is not null and not (app.capabilities()->>'actAs')::boolean then
    perform app.fail('ROLE_FORBIDDEN', 403, 'Requesting a review as another actor needs the act-as capability.');
  end if;
  select * into t from app.tasks where organization_id = t.organization_id and id = t.id for update;
  previous := t.status;
  update app.tasks
     set status = 'in_review', status_set_by = 'person', review_requested_at = app.now(),
         review_requested_by = app.user_id(), review_actor = args->>'actor',
         status_changed_at = case when status <> 'in_review' then app.now() else status_changed_at end,
         updated_at = app.now()
   where organization_id = t.organization_id and id = t.id
  returning * into t;
  perform app.audit('task.review_requested', 'task', t.id::text,
    jsonb_strip_nulls(jsonb_build_object('projectId', t.project_id, 'actor', args->>'actor', 'from', previous)));
  perform app.task_status_moved(t, previous, 'person');
  return jsonb_build_object('task', app.task_json(t));
end $$;

grant execute on function app.task_mirror_ignored, app.task_mirror_move, app.task_identifier, app.task_label_names,
  app.task_assignee_json, app.task_json, app.task_brief, app.units_issue, app.task_issues, app.task_label_ids,
  app.task_next_number, app.task_setup_folder, app.task_status_moved, app.task_repeated, app.task_upsert, app.task_visible,
  app.task_run_insert, app.task_start, app.task_require_start, api.task_create, api.task_get, api.tasks_list,
  api.task_update, api.task_start, api.task_review to api;
