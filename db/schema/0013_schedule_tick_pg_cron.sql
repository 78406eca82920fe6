-- pg_cron ticks schedule triggers every minute where this database is the one its
-- background worker reads jobs from (cron.database_name) and the extension can be
-- created here, or where an operator already created it here. Anywhere else this
-- does nothing: the worker's crontab calls the same app.schedule_tick(), and a tick
-- run twice for a minute starts no schedule twice.
--
-- The job is named after the database, so databases sharing one pg_cron never
-- replace each other's tick, and scheduling it again under its name (a restore, a
-- second run of this file) replaces it rather than adding a second.
do $$
declare
  here boolean := exists (select 1 from pg_extension where extname = 'pg_cron');
begin
  if not here and (current_setting('cron.database_name', true) is distinct from current_database()
                   or not exists (select 1 from pg_available_extensions where name = 'pg_cron')) then
    return;
  end if;
  begin
    create extension if not exists pg_cron;
    perform cron.schedule('tale_schedule_tick:' || current_database(), '* * * * *', 'select app.schedule_tick()');
  exception when others then
    -- pg_cron needs a superuser to create it, and its schema's usage to schedule;
    -- without them the worker's crontab ticks alone.
    raise notice 'schedules are ticked by the worker only; pg_cron not used: %', sqlerrm;
  end;
end $$;
