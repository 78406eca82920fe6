-- Asynchronous work is enqueued in the transaction of the change that needs it, so
-- a rolled-back change starts nothing and a committed one is never lost.
--
-- SECURITY DEFINER: the job queue's tables belong to graphile-worker and the owner;
-- the request role may add work through this door only, never read or alter jobs.
-- run_after delays the work; the queue runs on the real clock, whatever app.now()
-- says, so delays are durations rather than instants.
drop function if exists app.enqueue(text, jsonb, text);
create or replace function app.enqueue(task text, payload jsonb, job_key text default null, run_after interval default null)
returns void language plpgsql security definer set search_path = pg_catalog, app as $$
begin
  if task !~ '^[a-z_]+$' then
    raise exception 'app.enqueue: invalid task name %', task;
  end if;
  perform graphile_worker.add_job(task, payload::json, job_key => job_key,
                                  run_at => case when run_after is null then null else now() + run_after end);
end $$;
revoke execute on function app.enqueue(text, jsonb, text, interval) from public;
grant execute on function app.enqueue(text, jsonb, text, interval) to api;
