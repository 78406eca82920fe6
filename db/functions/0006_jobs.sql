-- Asynchronous work is enqueued in the transaction of the change that needs it, so
-- a rolled-back change starts nothing and a committed one is never lost.
--
-- SECURITY DEFINER: the job queue's tables belong to graphile-worker and the owner;
-- the request role may add work through this door only, never read or alter jobs.
-- run_after delays the work; the queue runs on the real clock, whatever app.now()
-- says, so delays are durations rather than instants.
drop function if exists app.enqueue(text, jsonb, text);
-- graphile_worker.add_job, sure to leave a job that runs after this transaction
-- commits. With a job_key, add_job updates the pending job of that key, but only while
-- no worker holds it: when a worker takes that job between this transaction's start
-- and its add_job, add_job waits for the worker's lock, finds the job taken and adds
-- nothing, and the taken job may already have read the world as it was before this
-- transaction. A second add_job then sees the job as taken, frees its key and adds a
-- new one, as it does for a job that was running all along (a drain of events, a run's
-- resumption or an indexing of a new revision is otherwise lost until something else
-- asks again).
create or replace function app.add_job(task text, payload json, job_key text default null, run_at timestamptz default null,
  queue_name text default null, max_attempts integer default null) returns void
language plpgsql as $$
declare
  added bigint;
begin
  for attempt in 1..3 loop
    added := (graphile_worker.add_job(task, payload, queue_name => queue_name, run_at => run_at, max_attempts => max_attempts,
                                      job_key => job_key)).id;
    exit when added is not null or job_key is null;
  end loop;
end $$;
revoke execute on function app.add_job(text, json, text, timestamptz, text, integer) from public;

create or replace function app.enqueue(task text, payload jsonb, job_key text default null, run_after interval default null)
returns void language plpgsql security definer set search_path = pg_catalog, app as $$
begin
  if task !~ '^[a-z_]+$' then
    raise exception 'app.enqueue: invalid task name %', task;
  end if;
  perform app.add_job(task, payload::json, job_key, case when run_after is null then null else now() + run_after end);
end $$;
revoke execute on function app.enqueue(text, jsonb, text, interval) from public;
grant execute on function app.enqueue(text, jsonb, text, interval) to api;
