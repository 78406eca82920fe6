-- The engine's side of a run's state machine (the worker, on the owner's connection):
-- claim a run, commit each step, show life, recover runs whose worker died. Nothing
-- here is granted to the request role.

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
  timeout_ms := coalesce((r.document->'config'->>'timeoutMs')::bigint, app.limit('run.defaultTimeoutMs'));
  -- An answer that resumed the run moves into the engine's state (EngineState.resume).
  update app.runs
     set status = 'running', waiting_for = null, detail = null, resume_at = null, resume = null,
         started_at = coalesce(started_at, app.now()),
         deadline_at = case when deadline_at is null then app.now() + timeout_ms * interval '1 millisecond'
                            when state ? 'remainingMs' then app.now() + (state->>'remainingMs')::bigint * interval '1 millisecond'
                            else deadline_at end,
         state = (case when resume is null then state else state || jsonb_build_object('resume', resume) end) - 'remainingMs',
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
  turn_id uuid;
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
    return 'running';
  elsif outcome = 'park' then
    if step->>'waitingFor' = 'approval' then
      insert into app.run_approvals (organization_id, run_id, step_slug, title)
      values (r.organization_id, r.id, step->'wait'->>'slug', step->'wait'->>'title') returning id into wait_id;
    elsif step->>'waitingFor' = 'ask' then
      insert into app.run_asks (organization_id, run_id, step_slug, question, fields)
      values (r.organization_id, r.id, step->'wait'->>'slug', step->'wait'->>'question', coalesce(step->'wait'->'fields', '[]'))
      returning id into wait_id;
    elsif step->>'waitingFor' = 'agent' then
      -- The agent's turn, run by its own job (db/functions/0097_agent_turns.sql).
      insert into app.agent_turns (organization_id, run_id, step_slug, run_seq, agent_id, agent_name, prompt, answer_format)
      values (r.organization_id, r.id, step->'wait'->>'slug', r.seq, app.as_uuid(step->'wait'->>'agentId'),
              step->'wait'->>'agentName', coalesce(step->'wait'->>'prompt', ''), coalesce(step->'wait'->'answerFormat', '{}'))
      returning id into turn_id;
      -- Few attempts: a turn that keeps failing is ended by app.worker_expire_agent_turns.
      perform app.add_job('run_agent', json_build_object('organizationId', r.organization_id, 'turnId', turn_id),
                          job_key => 'agent-turn:' || turn_id, max_attempts => 3);
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

