-- Agent steps that run (jobs/tasks/run-agent.ts). A live run reaching an `agent` step
-- checks the agent first (app.worker_agent_check), so a step that cannot run fails at
-- once instead of parking; the commit that parks the run writes the turn and enqueues
-- its job (app.worker_run_commit); the job starts the turn, calls the agent's granted
-- tools, and settles it: the run resumes with the answer, or fails with the turn's
-- failure code. Everything here runs on the worker's connection; nothing is granted
-- to the request role. A turn is answered only while its run still waits at the step
-- that handed it over, so a cancel or a timeout meanwhile leaves the run as it is.

-- The organization's catalog model an agent calls, with its provider's address and
-- key: the one provider the agent names, or the model's only provider. Null when the
-- catalog no longer has it (or several providers serve it and the agent names none).
create or replace function app.agent_model(a app.project_agents) returns jsonb language sql stable as $$
  select case when count(*) = 1 then (jsonb_agg(jsonb_build_object(
           'id', c.id, 'providerSlug', c.provider_slug, 'maxOutputTokens', c.max_output_tokens,
           'baseUrl', p.base_url, 'apiKey', p.api_key)))->0 end
    from app.model_catalog(a.organization_id) c
    left join app.model_providers p on p.organization_id = a.organization_id and p.slug = c.provider_slug
   where c.id = a.model and (a.model_provider is null or c.provider_slug = a.model_provider)
$$;

-- The agent a step names, in the run's project (an organization-wide run names the
-- project in the step's projectId, reached as its action steps are), checked for
-- what running it needs: a harness this deployment runs and a model of the catalog.
-- Answers {agentId, agentName} or {failureCode, detail}.
create or replace function app.worker_agent_check(organization uuid, run uuid, agent_ref text, project_ref text)
returns jsonb language plpgsql as $$
declare
  r app.runs;
  p app.projects;
  a app.project_agents;
begin
  select * into r from app.runs where organization_id = organization and id = run;
  perform set_config('app.org_id', r.organization_id::text, true);
  if r.project_id is null and project_ref is null then
    return jsonb_build_object('failureCode', 'node_error',
      'detail', 'an organization-wide run names the agent''s project in the step''s projectId');
  end if;
  begin
    p := app.run_action_project(r, project_ref);
  exception when sqlstate 'TL000' then
    declare
      message text;
    begin
      get stacked diagnostics message = message_text;
      return jsonb_build_object('failureCode', 'node_error', 'detail', 'agent step: ' || message);
    end;
  end;
  a := app.agent_for_run(organization, p.id, agent_ref);
  if a.id is null then
    return jsonb_build_object('failureCode', 'node_error',
      'detail', format('no agent "%s" in the project', agent_ref));
  end if;
  if not exists (select 1 from app.deployment_harnesses h where h.id = a.harness) then
    return jsonb_build_object('failureCode', 'node_error',
      'detail', format('the agent "%s" runs on the harness "%s", which this deployment does not run', a.name, a.harness));
  end if;
  if app.agent_model(a) is null then
    return jsonb_build_object('failureCode', 'model_not_found',
      'detail', format('the agent "%s" uses the model "%s", which is not in the organization''s catalog', a.name, a.model));
  end if;
  return jsonb_build_object('agentId', a.id, 'agentName', a.name, 'projectId', p.id);
end $$;

-- Takes a turn for the job: marks it running and answers what the agent needs (its
-- configuration, its model, the descriptions of its granted tools, the time the run
-- has left); null when the turn
-- is no longer the run's (cancelled, timed out, already settled), which voids it.
-- A job repeated after a worker died starts the turn over.
create or replace function app.worker_agent_start(organization uuid, turn uuid) returns jsonb language plpgsql as $$
declare
  tr app.agent_turns;
  r app.runs;
  a app.project_agents;
begin
  select * into tr from app.agent_turns where organization_id = organization and id = turn for update;
  if tr.id is null or tr.status not in ('queued', 'running') then
    return null;
  end if;
  select * into r from app.runs where organization_id = organization and id = tr.run_id;
  if not app.agent_turn_current(tr, r) then
    update app.agent_turns set status = 'void', finished_at = app.now() where organization_id = organization and id = turn;
    return null;
  end if;
  select * into a from app.project_agents where organization_id = organization and id = tr.agent_id;
  update app.agent_turns
     set status = 'running', started_at = app.now(), transcript = '[]',
         -- The time the run had left when it parked, counted from the park; a repeated
         -- job keeps the first deadline.
         deadline_at = coalesce(deadline_at, created_at
           + coalesce((r.state->>'remainingMs')::bigint, app.limit('run.defaultTimeoutMs')) * interval '1 millisecond')
   where organization_id = organization and id = turn
  returning * into tr;
  return jsonb_build_object(
    'turn', jsonb_build_object('id', tr.id, 'runId', tr.run_id, 'prompt', tr.prompt, 'answerFormat', tr.answer_format,
                               'agentName', tr.agent_name),
    'agent', case when a.id is not null then jsonb_build_object(
               'id', a.id, 'name', a.name, 'harness', a.harness, 'instructions', a.instructions, 'tools', to_jsonb(a.tools),
               'harnessRunnable', exists (select 1 from app.deployment_harnesses h where h.id = a.harness)) end,
    'model', case when a.id is not null then app.agent_model(a) end,
    'tools', coalesce((select jsonb_agg(t.tool) from jsonb_array_elements(app.agent_tools()) t(tool)
                        where t.tool->>'id' = any (a.tools)), '[]'),
    'remainingMs', greatest(0, (extract(epoch from tr.deadline_at - app.now()) * 1000)::bigint));
end $$;

-- Whether a turn is still the one its run waits for.
create or replace function app.agent_turn_current(tr app.agent_turns, r app.runs) returns boolean language sql stable as $$
  select r.id is not null and r.status = 'waiting' and r.waiting_for = 'agent' and r.seq = tr.run_seq
     and tr.status in ('queued', 'running')
$$;

-- Whether the turn is still wanted: the job asks while a long call runs, and stops it
-- when the run was cancelled meanwhile.
create or replace function app.worker_agent_live(organization uuid, turn uuid) returns boolean language sql stable as $$
  select coalesce((select app.agent_turn_current(tr, r)
                     from app.agent_turns tr join app.runs r on r.organization_id = tr.organization_id and r.id = tr.run_id
                    where tr.organization_id = organization and tr.id = turn), false)
$$;

-- Keeps the conversation so far; false when the turn is no longer its run's (a
-- cancel meanwhile): the job stops.
create or replace function app.worker_agent_progress(organization uuid, turn uuid, transcript jsonb) returns boolean
language plpgsql as $$
declare
  tr app.agent_turns;
  r app.runs;
begin
  select * into tr from app.agent_turns where organization_id = organization and id = turn;
  select * into r from app.runs where organization_id = organization and id = tr.run_id;
  if tr.id is null or not app.agent_turn_current(tr, r) then
    return false;
  end if;
  update app.agent_turns set transcript = worker_agent_progress.transcript where organization_id = organization and id = turn;
  return true;
end $$;

-- One call of a granted platform tool, by the rules of the REST operations, in the
-- run's project, attributed to the agent. `place` names the call (the turn and the
-- call's position), so a call the job repeats after a crash addresses the same task
-- or comment instead of writing twice. Answers {result} or {error}; a refusal writes
-- nothing and goes back to the model as the tool's answer.
create or replace function app.worker_agent_tool(organization uuid, turn uuid, place text, tool text, args jsonb)
returns jsonb language plpgsql as $$
declare
  tr app.agent_turns;
  r app.runs;
  a app.project_agents;
  p app.projects;
  t app.tasks;
  answer jsonb;
begin
  select * into tr from app.agent_turns where organization_id = organization and id = turn;
  -- Shared with other tool calls, exclusive of a cancel: no write lands after one.
  select * into r from app.runs where organization_id = organization and id = tr.run_id for share;
  if tr.id is null or not app.agent_turn_current(tr, r) then
    return jsonb_build_object('stopped', true);
  end if;
  select * into a from app.project_agents where organization_id = organization and id = tr.agent_id;
  if a.id is null or not tool = any (a.tools) then
    return jsonb_build_object('error', format('the tool %s is not granted to this agent', tool));
  end if;
  perform set_config('app.org_id', organization::text, true);
  perform set_config('app.user_id', '', true);
  perform set_config('app.run_id', r.id::text, true);
  select * into p from app.projects where organization_id = organization and id = a.project_id;
  if p.archived_at is not null and tool in ('tasks.create', 'tasks.comment', 'tasks.update') then
    return jsonb_build_object('error', 'the project is archived');
  end if;
  begin
    if tool in ('tasks.comment', 'tasks.update') or (tool = 'tasks.read' and args->>'taskId' is not null) then
      select * into t from app.tasks
       where organization_id = organization and project_id = p.id and id = app.as_uuid(args->>'taskId');
      if t.id is null then
        return jsonb_build_object('error', 'no such task in the project');
      end if;
    end if;
    answer := app.agent_tool_answer(r, p, t, a, tool, args, place);
    -- Each call's write is listed once, also when a repeated job makes the call again.
    if answer ? 'effect' then
      update app.agent_turns set effects = effects || jsonb_build_array(answer->'effect' || jsonb_build_object('call', place))
       where organization_id = organization and id = turn
         and not exists (select 1 from jsonb_array_elements(effects) e where e->>'call' = place);
    end if;
    return answer;
  exception when sqlstate 'TL000' then
    declare
      message text;
    begin
      get stacked diagnostics message = message_text;
      return jsonb_build_object('error', message);
    end;
  end;
end $$;

-- What one granted tool call does (app.worker_agent_tool decided it may run).
create or replace function app.agent_tool_answer(r app.runs, p app.projects, t app.tasks, a app.project_agents,
  tool text, args jsonb, place text) returns jsonb language plpgsql as $$
declare
  organization uuid := r.organization_id;
  c app.task_comments;
  previous text;
  upserted record;
  d app.documents;
  text_limit bigint := app.limit('agent.fileReadMaxBytes');
  extracted text;
begin
    case tool
    when 'tasks.read' then
      if t.id is not null then
        return jsonb_build_object('result', jsonb_build_object('task', app.task_json(t),
          'comments', coalesce((select jsonb_agg(app.comment_json(x) order by x.created_at, x.id)
                                  from (select * from app.task_comments k
                                         where k.organization_id = organization and k.task_id = t.id
                                         order by k.created_at desc, k.id desc limit 50) x), '[]')));
      end if;
      return jsonb_build_object('result', jsonb_build_object('tasks',
        coalesce((select jsonb_agg(app.task_json(x) order by x.updated_at desc, x.id)
                    from (select * from app.tasks k
                           where k.organization_id = organization and k.project_id = p.id and k.archived_at is null
                             and (args->>'status' is null or k.status = args->>'status')
                           order by k.updated_at desc, k.id limit 50) x), '[]')));
    when 'tasks.create' then
      upserted := app.task_upsert(p, jsonb_build_object('externalSystem', 'agent', 'externalId', place)
                                     || jsonb_strip_nulls(jsonb_build_object('title', args->'title',
                                          'description', args->'description', 'labels', args->'labels')), 'agent', r.id);
      return jsonb_build_object('result', jsonb_build_object('task', app.task_json(upserted.t)),
        'effect', jsonb_build_object('type', 'task.create', 'taskId', (upserted.t).id, 'projectId', p.id,
                                     'created', upserted.created, 'agent', a.name));
    when 'tasks.comment' then
      c := app.task_comment_add(t, args->>'body', 'agent', r.id, place);
      return jsonb_build_object('result', jsonb_build_object('commentId', c.id, 'taskId', t.id),
        'effect', jsonb_build_object('type', 'task.comment', 'taskId', t.id, 'commentId', c.id, 'projectId', p.id,
                                     'agent', a.name));
    when 'tasks.update' then
      if args->>'status' is null
         or args->>'status' not in ('backlog', 'todo', 'in_progress', 'in_review', 'done', 'cancelled') then
        return jsonb_build_object('error', 'status must be one of backlog, todo, in_progress, in_review, done, cancelled');
      end if;
      select * into t from app.tasks where organization_id = organization and id = t.id for update;
      previous := t.status;
      update app.tasks
         set status = args->>'status', status_set_by = 'agent', updated_at = app.now(),
             status_changed_at = case when status is distinct from args->>'status' then app.now() else status_changed_at end
       where organization_id = organization and id = t.id
      returning * into t;
      -- An agent's move raises no task.status_changed (the actor says so).
      perform app.task_status_moved(t, previous, 'agent');
      return jsonb_build_object('result', jsonb_build_object('task', app.task_json(t)),
        'effect', jsonb_build_object('type', 'task.update', 'taskId', t.id, 'projectId', p.id, 'from', previous,
                                     'to', t.status, 'agent', a.name));
    when 'files.read' then
      if args ? 'fileId' then
        select * into d from app.documents
         where organization_id = organization and project_id = p.id and id = app.as_uuid(args->>'fileId')
           and trashed_at is null and object_key is not null;
        if d.id is null then
          return jsonb_build_object('error', 'no such file in the project');
        end if;
        -- The indexed text, or what the service kept of a plain-text file before indexing existed.
        extracted := coalesce((select i.content from app.index_files i where i.document_id = d.id and i.status = 'completed'),
                              d.extracted_text);
        if extracted is null then
          return jsonb_build_object('error', format('the file %s (%s) has no text to read', d.file_name, d.mime_type));
        end if;
        return jsonb_build_object('result', jsonb_build_object('fileId', d.id, 'name', d.file_name, 'mimeType', d.mime_type,
          'text', app.utf8_left(extracted, text_limit),
          'truncated', octet_length(extracted) > text_limit));
      end if;
      return jsonb_build_object('result', jsonb_build_object('files',
        coalesce((select jsonb_agg(jsonb_build_object('fileId', x.id, 'name', x.file_name, 'folderId', x.folder_id,
                                                      'mimeType', x.mime_type, 'sizeBytes', x.size_bytes,
                                                      'readable', x.extracted_text is not null or exists (
                                                        select 1 from app.index_files i
                                                         where i.document_id = x.id and i.status = 'completed' and i.content is not null))
                                   order by x.created_at desc, x.id)
                    from (select * from app.documents k
                           where k.organization_id = organization and k.project_id = p.id and k.trashed_at is null
                             and k.object_key is not null
                           order by k.created_at desc, k.id limit 200) x), '[]')));
    when 'web.fetch' then
      -- Granted and still wanted: the job fetches the page itself.
      return jsonb_build_object('allowed', true);
    else
      return jsonb_build_object('error', format('the tool %s is not available in this deployment', tool));
    end case;
end $$;

-- The first bytes of a text, never more than max_bytes of UTF-8 and never half a
-- character.
create or replace function app.utf8_left(value text, max_bytes bigint) returns text language plpgsql immutable as $$
declare
  cut text := value;
begin
  if octet_length(value) <= max_bytes then
    return value;
  end if;
  cut := left(value, max_bytes::integer);
  while octet_length(cut) > max_bytes loop
    cut := left(cut, length(cut) - greatest(1, ((octet_length(cut) - max_bytes) / 4)::integer));
  end loop;
  return cut;
end $$;

-- Settles a turn: {output} resumes the run with the answer as the step's output;
-- {failureCode, detail} fails the run with that code and a trace entry for the step.
-- False when the turn is no longer its run's: nothing changes then.
create or replace function app.worker_agent_finish(organization uuid, turn uuid, outcome jsonb) returns boolean
language plpgsql as $$
declare
  tr app.agent_turns;
  r app.runs;
  left_ms bigint;
begin
  select * into tr from app.agent_turns where organization_id = organization and id = turn for update;
  select * into r from app.runs where organization_id = organization and id = tr.run_id for update;
  if tr.id is null or not app.agent_turn_current(tr, r) then
    update app.agent_turns set status = 'void', finished_at = app.now()
     where organization_id = organization and id = turn and status in ('queued', 'running');
    return false;
  end if;
  -- The agent's time counts against the run: what it had left at the park, less the
  -- turn. A turn that used it all fails the run with timeout, answer or not.
  left_ms := coalesce((r.state->>'remainingMs')::bigint, app.limit('run.defaultTimeoutMs'))
             - (extract(epoch from app.now() - tr.created_at) * 1000)::bigint;
  if left_ms <= 0 and not outcome ? 'failureCode' then
    outcome := jsonb_build_object('failureCode', 'timeout', 'detail', 'the run''s time ran out while its agent was working');
  end if;
  update app.agent_turns
     set status = case when outcome ? 'failureCode' then 'failed' else 'completed' end,
         output = outcome->'output', failure_code = outcome->>'failureCode', detail = outcome->>'detail',
         transcript = coalesce(nullif(outcome->'transcript', '[]'::jsonb), transcript), finished_at = app.now()
   where organization_id = organization and id = turn
  returning * into tr;
  update app.runs
     set effects = effects || coalesce((select jsonb_agg((e - 'call') || jsonb_build_object('step', tr.step_slug))
                                          from jsonb_array_elements(tr.effects) e), '[]'),
         state = state || jsonb_build_object('remainingMs', greatest(0, left_ms))
   where organization_id = organization and id = r.id
  returning * into r;
  if outcome ? 'failureCode' then
    update app.runs
       set status = 'failed', waiting_for = null, failure_code = outcome->>'failureCode',
           detail = tr.step_slug || ': ' || (outcome->>'detail'), finished_at = app.now(), updated_at = app.now(),
           trace = trace || jsonb_build_array(jsonb_build_object('slug', tr.step_slug, 'type', 'agent',
             'startedAt', app.ms(coalesce(tr.started_at, tr.created_at)), 'finishedAt', app.ms(app.now()),
             'error', outcome->>'detail'))
     where organization_id = organization and id = r.id;
  else
    perform app.run_resume(r, tr.step_slug, 'success', outcome->'output');
  end if;
  return true;
end $$;

-- Agent turns that outlived their deadline (a job that died, or kept failing until it
-- ran out of attempts) fail their runs with timeout, so no run waits for an agent
-- forever. Called by the worker's every-minute recovery.
create or replace function app.worker_expire_agent_turns(grace interval) returns integer language plpgsql as $$
declare
  stale record;
  n integer := 0;
begin
  for stale in
    select t.organization_id, t.id from app.agent_turns t
      join app.runs r on r.organization_id = t.organization_id and r.id = t.run_id
     where t.status in ('queued', 'running') and r.status = 'waiting' and r.waiting_for = 'agent' and r.seq = t.run_seq
       and coalesce(t.deadline_at, t.created_at + coalesce((r.state->>'remainingMs')::bigint, app.limit('run.defaultTimeoutMs'))
                                                  * interval '1 millisecond') < app.now() - grace
  loop
    if app.worker_agent_finish(stale.organization_id, stale.id,
         jsonb_build_object('failureCode', 'timeout', 'detail', 'the agent did not answer before the run''s time ran out')) then
      n := n + 1;
    end if;
  end loop;
  return n;
end $$;
