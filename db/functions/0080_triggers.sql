-- Triggers over REST: one binding per automation (schedule, webhook or event), its
-- state table (enable, disable, rotation, replacement) and its health. Schedules are
-- ticked in 0081_schedules.sql, webhook deliveries accepted in 0082_webhooks.sql,
-- events drained in 0083_events.sql; all of them start runs through
-- app.trigger_fire below and read the outcome back through app.trigger_run_finished.

-- The failure codes that count toward a binding's consecutive failures: problems a
-- retry would meet again, as opposed to timeouts, cancellations and bad input.
create or replace function app.trigger_counted_failure(code text) returns boolean language sql immutable as $$
  select code in ('node_error', 'connector_error', 'llm_output_invalid', 'auth_error', 'missing_api_key',
                  'credit_exhausted', 'model_not_found')
$$;

-- lastFiredAt and lastRunId come from the binding's newest run since it took its kind.
create or replace function app.trigger_json(t app.automation_triggers) returns jsonb language sql stable as $$
  select jsonb_build_object('kind', t.kind, 'enabled', t.enabled)
    || case t.kind
         when 'schedule' then jsonb_build_object('cron', t.cron, 'timezone', t.timezone,
                                                 'nextDueAt', app.ms(t.next_due_at))
         when 'event' then jsonb_build_object('event', t.event)
         else '{}'::jsonb end
    || jsonb_build_object(
         'lastFiredAt', app.ms(last.created_at), 'lastRunId', last.id,
         'lastSkippedAt', app.ms(t.last_skipped_at), 'lastSkipReason', t.last_skip_reason,
         'consecutiveFailures', t.consecutive_failures,
         'lastFailedAt', app.ms(t.last_failed_at), 'lastFailureCode', t.last_failure_code,
         'lastFailedRunId', t.last_failed_run_id,
         'createdAt', app.ms(t.created_at), 'updatedAt', app.ms(t.updated_at))
    from app.trigger_last_run(t.id, t.bound_at) last
$$;

-- The newest run a binding started since it took its kind. SECURITY DEFINER: a
-- binding's health reads the same for every member (the run's contents stay behind
-- the run policies); only the id and the instant leave, of the caller's organization.
create or replace function app.trigger_last_run(trigger uuid, since timestamptz, out id uuid, out created_at timestamptz)
language sql stable security definer set search_path = pg_catalog, app as $$
  select r.id, r.created_at from app.runs r
   where r.trigger_id = trigger and r.created_at >= since and r.organization_id = app.org_id()
   order by r.created_at desc limit 1
$$;

-- The automation's trigger as reads show it, or null when none is bound.
create or replace function app.automation_trigger_json(a app.automations) returns jsonb language sql stable as $$
  select coalesce((select app.trigger_json(t) from app.automation_triggers t
                    where t.organization_id = a.organization_id and t.automation_id = a.id), 'null'::jsonb)
$$;

create or replace function app.trigger_invalid(message text, data jsonb) returns void language plpgsql as $$
begin
  perform app.fail('AUTOMATION_TRIGGER_INVALID', 400, message, data);
end $$;

-- A URL token: 256 random bits, base64url. Only its SHA-256 is kept.
create or replace function app.webhook_token() returns text language sql volatile as $$
  select rtrim(translate(encode(public.gen_random_bytes(32), 'base64'), '+/', '-_'), '=')
$$;

create or replace function app.webhook_token_hash(token text) returns bytea language sql immutable as $$
  select sha256(convert_to(token, 'UTF8'))
$$;

create or replace function api.triggers_list(args jsonb) returns jsonb language plpgsql stable as $$
declare
  a app.automations := app.automation_named(args->>'name');
begin
  return jsonb_build_object('triggers', coalesce((
    select jsonb_agg(app.trigger_json(t)) from app.automation_triggers t
     where t.organization_id = a.organization_id and t.automation_id = a.id), '[]'));
end $$;

-- PUT: binds, rebinds or reconfigures the automation's one trigger. The server has
-- parsed a schedule's expression with its cron library: args.cronFields holds the
-- expanded sets, or args.cronProblem says why it is not a five-field expression.
create or replace function api.trigger_put(args jsonb) returns jsonb language plpgsql as $$
declare
  a app.automations;
  new_kind text := args->>'kind';
  zone text := args->>'timezone';
  fields jsonb;
  due timestamptz;
  raised boolean;
  prior app.automation_triggers;
  t app.automation_triggers;
  token text;
  revoked text;
  at timestamptz := app.now();
begin
  perform app.require_developer('Binding a trigger');
  a := app.automation_named(args->>'name');

  if new_kind = 'schedule' then
    if args ? 'cronProblem' then
      perform app.trigger_invalid(format('The cron expression is not usable: %s.', args->>'cronProblem'),
        jsonb_build_object('field', 'cron', 'cron', args->>'cron', 'problem', args->>'cronProblem'));
    end if;
    if zone is not null and not app.is_time_zone(zone) then
      perform app.trigger_invalid(format('"%s" is not an IANA time zone.', zone),
        jsonb_build_object('field', 'timezone', 'timezone', zone));
    end if;
    fields := args->'cronFields';
    due := app.cron_next(fields, coalesce(zone, 'UTC'), at);
    if due is null then
      perform app.trigger_invalid('The cron expression matches no instant.',
        jsonb_build_object('field', 'cron', 'cron', args->>'cron'));
    end if;
  elsif new_kind = 'event' then
    select e.raised into raised from app.platform_events e where e.name = args->>'event';
    if raised is not true then
      perform app.trigger_invalid(format('"%s" is not an event this deployment raises.', args->>'event'),
        jsonb_build_object('field', 'event', 'event', args->>'event',
          'events', (select jsonb_agg(e.name order by e.name) from app.platform_events e where e.raised)));
    end if;
  end if;

  -- One PUT or DELETE of an automation's trigger at a time, also when none exists yet
  -- (two first binds would otherwise both insert).
  perform pg_advisory_xact_lock(hashtextextended('automation-trigger:' || a.id::text, 0));
  select * into prior from app.automation_triggers
   where organization_id = a.organization_id and automation_id = a.id for update;
  -- A tick that held the row meanwhile may have started occurrences after `at`.
  if new_kind = 'schedule' and prior.due_through > at then
    due := app.cron_next(fields, coalesce(zone, 'UTC'), prior.due_through);
  end if;

  if new_kind = 'webhook' and (prior.id is null or prior.kind <> 'webhook' or (args->>'rotateToken')::boolean is true) then
    token := app.webhook_token();
  end if;
  if prior.kind = 'webhook' and new_kind <> 'webhook' then
    revoked := 'webhook';
  end if;

  if prior.id is null then
    insert into app.automation_triggers (organization_id, automation_id, kind, enabled, cron, timezone, cron_fields,
                                         next_due_at, event, token_hash, bound_at, bound_by, created_at, updated_at)
    values (a.organization_id, a.id, new_kind, coalesce((args->>'enabled')::boolean, true),
            args->>'cron', zone, fields, due, args->>'event', app.webhook_token_hash(token), at, app.user_id(), at, at)
    returning * into t;
  else
    -- Every PUT enables unless told otherwise and clears the failure count and the
    -- skip; a binding of another kind also restarts every health stamp.
    update app.automation_triggers set
      kind = new_kind,
      enabled = coalesce((args->>'enabled')::boolean, true),
      cron = args->>'cron', timezone = zone, cron_fields = fields, next_due_at = due,
      event = args->>'event',
      token_hash = case when new_kind <> 'webhook' then null
                        when token is not null then app.webhook_token_hash(token)
                        else token_hash end,
      consecutive_failures = 0, last_skipped_at = null, last_skip_reason = null,
      bound_at = case when new_kind <> prior.kind then at else bound_at end,
      bound_by = app.user_id(),
      last_failed_at = case when new_kind <> prior.kind then null else last_failed_at end,
      last_failure_code = case when new_kind <> prior.kind then null else last_failure_code end,
      last_failed_run_id = case when new_kind <> prior.kind then null else last_failed_run_id end,
      updated_at = at
    where organization_id = prior.organization_id and id = prior.id
    returning * into t;
  end if;

  perform app.audit('automation.trigger.bound', 'automation', a.id::text, jsonb_build_object(
    'name', a.name, 'kind', t.kind, 'enabled', t.enabled, 'rotated', token is not null and prior.kind = 'webhook',
    'revoked', revoked));
  return jsonb_build_object('name', a.name, 'deployed', a.deployed_version is not null, 'trigger', app.trigger_json(t))
    || case when token is not null then jsonb_build_object('token', token) else '{}'::jsonb end
    || case when revoked is not null then jsonb_build_object('revoked', revoked) else '{}'::jsonb end;
end $$;

-- DELETE: 204 whether or not a trigger (or its automation) exists; a webhook's URL
-- dies with it.
create or replace function api.trigger_delete(args jsonb) returns jsonb language plpgsql as $$
declare
  a app.automations;
  gone app.automation_triggers;
begin
  perform app.require_developer('Removing a trigger');
  a := app.automation_find(args->>'name');
  if a.id is null then
    -- No automation, so no trigger: the answer is the same 204.
    return null;
  end if;
  perform pg_advisory_xact_lock(hashtextextended('automation-trigger:' || a.id::text, 0));
  delete from app.automation_triggers where organization_id = a.organization_id and automation_id = a.id
  returning * into gone;
  if gone.id is not null then
    perform app.audit('automation.trigger.removed', 'automation', a.id::text,
      jsonb_build_object('name', a.name, 'kind', gone.kind));
  end if;
  return null;
end $$;

-- The project a trigger-started run belongs to, by the binding rules of REST starts:
-- an automation installed nowhere runs organization-wide; installed in one project,
-- there; installed in several, in the project the occurrence names when it is one
-- of them (a project webhook URL, an event in a project). Null with refused set when
-- no single active project fits.
create or replace function app.trigger_run_project(a app.automations, named uuid, out project uuid, out refused boolean)
language plpgsql stable as $$
declare
  installed uuid[];
begin
  refused := false;
  select coalesce(array_agg(i.project_id), '{}') into installed from app.automation_installs i
   where i.organization_id = a.organization_id and i.automation_id = a.id;
  if cardinality(installed) = 0 then
    return;
  end if;
  if named is not null and named = any (installed) then
    project := named;
  elsif cardinality(installed) = 1 then
    project := installed[1];
  else
    refused := true;
    return;
  end if;
  if not exists (select 1 from app.projects p
                  where p.organization_id = a.organization_id and p.id = project and p.archived_at is null) then
    project := null;
    refused := true;
  end if;
end $$;

-- Starts a run of the trigger's automation: the deployed version, with input, in
-- project (null: organization-wide), attributed to the trigger. The caller has
-- decided the run may start; this writes it and its job.
create or replace function app.trigger_start_run(t app.automation_triggers, a app.automations, project uuid,
  input jsonb, via text, run_id uuid default gen_random_uuid(), at timestamptz default null) returns app.runs
language plpgsql as $$
begin
  return app.run_begin(a, project, input, null, t.id, via, null, run_id, at);
end $$;

-- An occurrence that starts nothing: its instant and why.
create or replace function app.trigger_skip(t app.automation_triggers, reason text, at timestamptz default null)
returns void language sql as $$
  update app.automation_triggers set last_skipped_at = coalesce(at, app.now()), last_skip_reason = reason
   where organization_id = t.organization_id and id = t.id
$$;

-- One occurrence of a schedule or an event: a run, or a recorded skip. Returns the
-- run's id, or null when the occurrence was skipped.
create or replace function app.trigger_fire(t app.automation_triggers, named_project uuid, input jsonb, via text,
  at timestamptz default null) returns uuid language plpgsql as $$
declare
  a app.automations;
  placed record;
begin
  select * into a from app.automations where organization_id = t.organization_id and id = t.automation_id;
  if a.deployed_version is null then
    perform app.trigger_skip(t, 'not_deployed', at);
    return null;
  end if;
  placed := app.trigger_run_project(a, named_project);
  if placed.refused then
    perform app.trigger_skip(t, 'start_refused', at);
    return null;
  end if;
  return (app.trigger_start_run(t, a, placed.project, input, via, gen_random_uuid(), at)).id;
end $$;

-- A trigger-started run ended: the binding's health follows it. Counted failures
-- add up and, on a schedule, pause it at the limit; a success clears the count
-- unless the schedule was already paused; anything else moves nothing. Runs started
-- before the binding took its current kind belong to the old binding.
create or replace function app.trigger_run_finished(r app.runs) returns void language plpgsql as $$
declare
  t app.automation_triggers;
  pause_at integer := app.limit('trigger.pauseAfterFailures')::integer;
begin
  -- A plain read: a success on a healthy binding (the common ending) writes nothing,
  -- so finishing runs never queue behind deliveries on the trigger's row.
  select * into t from app.automation_triggers where id = r.trigger_id;
  if t.id is null or r.created_at < t.bound_at then
    return;
  end if;
  if r.status = 'completed' then
    update app.automation_triggers set consecutive_failures = 0
     where id = t.id and consecutive_failures <> 0 and bound_at <= r.created_at
       and not (kind = 'schedule' and not enabled and last_skip_reason = 'paused_after_failures');
  elsif r.status = 'failed' and app.trigger_counted_failure(r.failure_code) then
    update app.automation_triggers
       set consecutive_failures = consecutive_failures + 1, last_failed_at = coalesce(r.finished_at, app.now()),
           last_failure_code = r.failure_code, last_failed_run_id = r.id
     where id = t.id and bound_at <= r.created_at
    returning * into t;
    if t.id is null then
      return;
    end if;
    if t.kind = 'schedule' and t.enabled and t.consecutive_failures >= pause_at then
      perform app.trigger_pause(t);
    end if;
  end if;
end $$;

-- A schedule paused after too many counted failures: disabled with the reason, an
-- audit row, and a notification to every active Owner and Admin.
create or replace function app.trigger_pause(t app.automation_triggers) returns void language plpgsql as $$
declare
  a app.automations;
  params jsonb;
begin
  select * into a from app.automations where organization_id = t.organization_id and id = t.automation_id;
  update app.automation_triggers
     set enabled = false, last_skip_reason = 'paused_after_failures', last_skipped_at = app.now(), updated_at = app.now()
   where id = t.id;
  params := jsonb_build_object('automation', a.name, 'triggerId', t.id, 'failures', t.consecutive_failures,
                               'lastFailureCode', t.last_failure_code, 'lastFailedRunId', t.last_failed_run_id);
  insert into app.audit_log (organization_id, actor_user_id, action, subject_type, subject_id, data)
  values (t.organization_id, null, 'automation.trigger.paused', 'automation', t.automation_id::text, params);
  insert into app.notifications (organization_id, recipient_id, kind, stream, params)
  select m.organization_id, m.user_id, 'automation.trigger.paused', 'organization', params
    from app.memberships m
   where m.organization_id = t.organization_id and m.role in ('owner', 'admin') and not m.disabled;
end $$;

-- Every way a run ends (the engine, a timeout, a cancel, a recovery) passes here.
create or replace function app.runs_trigger_health() returns trigger language plpgsql as $$
begin
  perform app.trigger_run_finished(new);
  return null;
end $$;

drop trigger if exists runs_trigger_health on app.runs;
create trigger runs_trigger_health after update of status on app.runs
  for each row
  when (new.trigger_id is not null and new.status in ('completed', 'failed') and old.status is distinct from new.status)
  execute function app.runs_trigger_health();

grant execute on function app.trigger_counted_failure, app.trigger_json, app.automation_trigger_json, app.trigger_last_run,
  app.trigger_invalid, app.webhook_token, app.webhook_token_hash, api.triggers_list, api.trigger_put,
  api.trigger_delete to api;
