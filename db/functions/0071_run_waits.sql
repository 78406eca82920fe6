-- The human waits of a run: approvals to decide and questions to answer. The engine
-- parks a run on them (0072_run_engine.sql); an answer resumes it; a cancel voids them.

-- Approvals and questions of a run that stops waiting are void.
create or replace function app.run_void_waits(r app.runs) returns void language sql as $$
  update app.run_approvals set status = 'void' where organization_id = r.organization_id and run_id = r.id and status = 'pending';
  update app.run_asks set status = 'void' where organization_id = r.organization_id and run_id = r.id and status = 'open';
$$;

-- Resumes a parked run at the port an answer chose; the engine picks it up and takes
-- the answer into the run's state (app.worker_run_claim).
create or replace function app.run_resume(r app.runs, slug text, port text, step_output jsonb) returns void
language plpgsql as $$
begin
  update app.runs
     set status = 'queued', waiting_for = null, detail = null, resume_at = null, updated_at = app.now(),
         resume = jsonb_build_object('slug', slug, 'port', port, 'output', step_output)
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
  r := app.run_for_change(r);
  -- Locked when still pending; read as it is otherwise, to be refused below.
  select * into approval from app.run_approvals
   where organization_id = r.organization_id and run_id = r.id and id = app.as_uuid(args->>'approvalId')
   for update;
  if approval.id is null then
    select * into approval from app.run_approvals
     where organization_id = r.organization_id and run_id = r.id and id = app.as_uuid(args->>'approvalId');
  end if;
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
  r := app.run_for_change(r);
  -- Locked when still open; read as it is otherwise, to be refused below.
  select * into q from app.run_asks
   where organization_id = r.organization_id and run_id = r.id and id = app.as_uuid(args->>'askId') for update;
  if q.id is null then
    select * into q from app.run_asks
     where organization_id = r.organization_id and run_id = r.id and id = app.as_uuid(args->>'askId');
  end if;
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


-- Whether the answer a run resumes with is one the caller recorded: a decision of a
-- decided approval of that step, or an answered question of it, in their name. The
-- runs policy holds a resumption to it, so a run never resumes past its wait without
-- the approval or answer on record.
create or replace function app.resumes_with_recorded_answer(run uuid, resumed_with jsonb) returns boolean
language plpgsql stable as $$
begin
  return exists (select 1 from app.run_approvals a
                  where a.organization_id = app.org_id() and a.run_id = run and a.step_slug = resumed_with->>'slug'
                    and a.status = resumed_with->>'port' and a.decided_by = app.user_id())
      or exists (select 1 from app.run_asks q
                  where q.organization_id = app.org_id() and q.run_id = run and q.step_slug = resumed_with->>'slug'
                    and q.status = 'answered' and resumed_with->>'port' = 'success' and q.answered_by = app.user_id());
end $$;

grant execute on function app.run_void_waits, app.run_resume, api.run_decide_approval, app.ask_json, api.run_ask,
  app.ask_answer_issues, api.run_answer_ask, app.resumes_with_recorded_answer to api;
