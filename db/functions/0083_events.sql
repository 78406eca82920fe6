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

-- The events of an outbox row, in the order they were raised: its one payload, or
-- the payloads of its batch (db/schema/0031_event_batches.sql), as JSON; `skip` of
-- them passed over and at most `take` (null: all) returned. The drain reads a row's
-- events through it, and so can anyone inspecting the outbox. (JSON rather than
-- jsonb: the drain reads each event as jsonb where a payload that cannot be is
-- refused for that event alone.)
create or replace function app.event_payloads(e app.events, skip integer default 0, take integer default null)
returns table (event_position integer, payload json) language sql stable as $$
  select 1, e.payload::json where e.payloads is null and skip = 0 and coalesce(take, 1) > 0
  union all
  (select p.ord::integer, p.value from json_array_elements(e.payloads) with ordinality p(value, ord)
    where e.payloads is not null order by p.ord offset skip limit take)
$$;

-- Starts the runs of up to `batch` pending events, oldest first, each event once:
-- rows are locked and marked drained in the same transaction as the runs they start,
-- so two workers never both take one and a crash loses none. A row holds one event
-- or a batch of one name (db/schema/0031_event_batches.sql): a batch's events are
-- started in their order, as many as the call has room for, and the rest wait for the
-- next call with the row (drained_count); a drain running meanwhile passes the locked
-- row by and may start later events first. A row no binding hears is drained whole,
-- however many events it holds. Returns the events drained; the worker calls it again
-- until it returns 0. (Each call with a heard batch reads the batch's JSON whole, so
-- draining a batch of n events into runs reads it n / batch times.)
create or replace function app.events_drain(batch integer default 100) returns integer language plpgsql as $$
declare
  e app.events;
  bindings app.automation_triggers[];
  t app.automation_triggers;
  payload json;
  taken integer;
  drained integer := 0;
begin
  for e in
    select * from app.events where drained_at is null order by id limit batch for update skip locked
  loop
    exit when drained >= batch;
    -- The bindings that hear this row's events: bound by the time they were raised,
    -- and not the automation of the run that raised them.
    bindings := array(
      select binding from app.automation_triggers binding
       where binding.organization_id = e.organization_id and binding.kind = 'event' and binding.enabled
         and binding.event = e.name and binding.bound_at <= e.raised_at
         and not exists (select 1 from app.runs source
                          where source.organization_id = e.organization_id and source.id = e.source_run_id
                            and source.automation_id = binding.automation_id)
       order by binding.id);
    -- With no binding listening, the whole row is drained at once, batch or not.
    taken := case when cardinality(bindings) = 0 then e.event_count - e.drained_count
                  else least(e.event_count - e.drained_count, batch - drained) end;
    if cardinality(bindings) > 0 then
      for payload in select p.payload from app.event_payloads(e, e.drained_count, taken) p loop
        foreach t in array bindings loop
          begin
            perform app.trigger_fire(t, e.project_id,
              jsonb_build_object('trigger', 'event', 'event', e.name, 'payload', payload::jsonb), 'event');
          exception when others then
            -- One binding that cannot start (or an event whose payload cannot be read)
            -- must not hold back the event's other bindings, the row's other events,
            -- nor leave them pending for every drain to come.
            perform app.trigger_skip(t, 'start_refused');
          end;
        end loop;
      end loop;
    end if;
    update app.events
       set drained_count = e.drained_count + taken,
           drained_at = case when e.drained_count + taken = e.event_count then app.now() end
     where organization_id = e.organization_id and id = e.id;
    drained := drained + taken;
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
