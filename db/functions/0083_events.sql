-- Platform events: raised into the outbox (app.events) in the transaction of the
-- change that causes them, drained by the worker into runs of the event triggers
-- bound when the event was raised. A family raises its events by calling
-- app.raise_event from the function that makes the change, and flips its events to
-- raised in app.platform_events.

-- actor_kind: 'person' for a change a person or key made; 'automation' or 'agent' for
-- one a run or an agent made on its own. Their own task moves raise nothing, and an
-- event a run raised (app.run_id) never reaches its own automation's bindings, so an
-- automation cannot set itself off again.
create or replace function app.raise_event(organization uuid, event_name text, payload jsonb,
  project uuid default null, actor_kind text default 'person') returns void language plpgsql as $$
begin
  if event_name = 'task.status_changed' and actor_kind <> 'person' then
    return;
  end if;
  insert into app.events (organization_id, name, payload, project_id, actor_user_id, source_run_id)
  values (organization, event_name, payload, project, app.user_id(), nullif(current_setting('app.run_id', true), '')::uuid);
  -- A drain at once when a binding listens; the worker's every-minute drain takes the
  -- rest (an event no binding listens to, or one raised while a binding was being
  -- made), so no event is decided by what this transaction could see.
  if exists (select 1 from app.automation_triggers t
              where t.organization_id = organization and t.kind = 'event' and t.enabled and t.event = event_name) then
    -- One pending drain at a time; an event raised while one runs queues the next.
    perform app.enqueue('drain_events', '{}'::jsonb, 'drain_events');
  end if;
end $$;

-- Starts the runs of up to `batch` pending events, oldest first, each event once:
-- rows are locked and marked drained in the same transaction as the runs they start,
-- so two workers never both take one and a crash loses none. Returns the events
-- drained; the worker calls it again until it returns 0.
create or replace function app.events_drain(batch integer default 100) returns integer language plpgsql as $$
declare
  e app.events;
  t app.automation_triggers;
  drained integer := 0;
begin
  for e in
    select * from app.events where drained_at is null order by id limit batch for update skip locked
  loop
    for t in
      select * from app.automation_triggers binding
       where binding.organization_id = e.organization_id and binding.kind = 'event' and binding.enabled
         and binding.event = e.name and binding.bound_at <= e.raised_at
         and not exists (select 1 from app.runs source
                          where source.organization_id = e.organization_id and source.id = e.source_run_id
                            and source.automation_id = binding.automation_id)
       order by binding.id
    loop
      begin
        perform app.trigger_fire(t, e.project_id,
          jsonb_build_object('trigger', 'event', 'event', e.name, 'payload', e.payload), 'event');
      exception when others then
        -- One binding that cannot start must not hold back the event's other bindings,
        -- nor leave the event pending for every drain to come.
        perform app.trigger_skip(t, 'start_refused');
      end;
    end loop;
    update app.events set drained_at = app.now() where organization_id = e.organization_id and id = e.id;
    drained := drained + 1;
  end loop;
  return drained;
end $$;

-- Drained events are kept a while for inspection, then forgotten.
create or replace function app.events_sweep() returns integer language sql as $$
  with gone as (
    delete from app.events
     where drained_at is not null and drained_at < app.now() - make_interval(secs => app.limit('events.keepSeconds'))
    returning 1
  ) select count(*)::integer from gone
$$;

grant execute on function app.raise_event to api;
