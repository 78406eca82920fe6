-- Schedules: the next occurrence of a cron expression in its time zone, and the tick
-- that starts every schedule due at an instant. pg_cron calls the tick every minute
-- where the extension is installed; elsewhere the worker's crontab does. Either may
-- run it twice for a minute, or from several replicas at once: a schedule starts one
-- run per occurrence.
--
-- The server parses expressions with its cron library (server/core/schedules/cron.ts)
-- into the sets matched here, {minutes, hours, days, months, weekdays, anyDay,
-- anyWeekday}: no expression is parsed in SQL. Day of month and day of week combine
-- as in cron: when both are restricted a day matching either fires; when either is
-- written with a leading `*`, a day must match both.

-- Whether PostgreSQL knows the zone by its IANA name (the zone database it converts
-- with is the one schedules fire by).
create or replace function app.is_time_zone(zone text) returns boolean language sql stable as $$
  select zone !~ '^(posix|right)/' and exists (select 1 from pg_timezone_names n where n.name = zone)
$$;

create or replace function app.cron_day_matches(fields jsonb, day date) returns boolean language plpgsql immutable as $$
declare
  dom_ok boolean := (fields->'days') @> to_jsonb(extract(day from day)::integer);
  dow_ok boolean := (fields->'weekdays') @> to_jsonb(extract(dow from day)::integer);
begin
  if not (fields->'months') @> to_jsonb(extract(month from day)::integer) then
    return false;
  end if;
  -- As cron has it: a day field written with a leading `*` (`*`, `*/2`) makes the two
  -- fields combine with AND; two restricted fields combine with OR.
  if (fields->>'anyDay')::boolean or (fields->>'anyWeekday')::boolean then
    return dom_ok and dow_ok;
  end if;
  return dom_ok or dow_ok;
end $$;

-- The first occurrence strictly after `after`, or null when none comes within eight
-- years (the longest a five-field expression can wait is a 29 February that falls
-- on the days it names). Occurrences are wall-clock times in the zone: a time the
-- spring change skips fires at the instant PostgreSQL maps it to (an hour later),
-- and a time the autumn change repeats fires once.
create or replace function app.cron_next(fields jsonb, zone text, after timestamptz) returns timestamptz
language plpgsql stable as $$
declare
  minutes integer[] := array(select v::integer from jsonb_array_elements_text(fields->'minutes') v order by 1);
  hours integer[] := array(select v::integer from jsonb_array_elements_text(fields->'hours') v order by 1);
  day date := (after at time zone zone)::date;
  h integer;
  m integer;
  candidate timestamptz;
begin
  if fields is null or cardinality(minutes) = 0 or cardinality(hours) = 0 then
    return null;
  end if;
  for i in 0 .. 366 * 8 + 2 loop
    if app.cron_day_matches(fields, day) then
      foreach h in array hours loop
        foreach m in array minutes loop
          candidate := (day + make_time(h, m, 0)) at time zone zone;
          if candidate > after then
            return candidate;
          end if;
        end loop;
      end loop;
    end if;
    day := day + 1;
  end loop;
  return null;
end $$;

-- Starts every enabled schedule whose occurrence is due at `at`, once per
-- occurrence: the row lock and the advanced next_due_at make a repeated or a
-- concurrent tick find nothing left to start. After downtime a schedule that missed
-- several occurrences starts one run (for the first it missed) and moves on to its
-- next occurrence after `at`, so no burst follows. Returns the runs started.
create or replace function app.schedule_tick(at timestamptz default null) returns integer language plpgsql as $$
declare
  instant timestamptz := coalesce(at, app.now());
  t app.automation_triggers;
  next_at timestamptz;
  started integer := 0;
  run uuid;
begin
  for t in
    select * from app.automation_triggers
     where kind = 'schedule' and enabled and next_due_at <= instant
     order by next_due_at
     for update skip locked
  loop
    begin
      next_at := app.cron_next(t.cron_fields, coalesce(t.timezone, 'UTC'), instant);
    exception when invalid_parameter_value then
      next_at := null; -- the zone left PostgreSQL's zone database
    end;
    run := null;
    if next_at is null then
      -- The zone left PostgreSQL's database, or the expression can no longer fire.
      perform app.trigger_skip(t, 'unusable_cron', instant);
    else
      begin
        run := app.trigger_fire(t, null,
          jsonb_build_object('trigger', 'schedule', 'scheduledAt', app.ms(t.next_due_at), 'firedAt', app.ms(instant)),
          'schedule', instant);
      exception when others then
        -- One schedule that cannot start (its automation changing under it, say) must
        -- not hold back the others of this tick.
        perform app.trigger_skip(t, 'start_refused', instant);
      end;
    end if;
    update app.automation_triggers set next_due_at = next_at, due_through = instant where id = t.id;
    if run is not null then
      started := started + 1;
    end if;
  end loop;
  return started;
end $$;

-- Nothing here is the request role's: the tick runs as the owner (pg_cron, worker).
grant execute on function app.is_time_zone, app.cron_day_matches, app.cron_next to api;
