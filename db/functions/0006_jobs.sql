-- Asynchronous work is enqueued in the transaction of the change that needs it, so
-- a rolled-back change starts nothing and a committed one is never lost.
--
-- SECURITY DEFINER: the job queue's tables belong to graphile-worker and the owner;
-- the request role may add work through this door only, never read or alter jobs.
-- run_after delays the work; the queue runs on the real clock, whatever app.now()
-- says, so delays are durations rather than instants.
drop function if exists app.enqueue(text, jsonb, text);
-- graphile_worker.add_job, sure to leave a job that runs after this transaction
-- commits. With a job_key, add_job frees the key of a job a worker holds and adds a
-- new job, or updates the pending job of that key; but when a worker's take of that
-- pending job commits while add_job runs, add_job waits for the take, finds the job
-- taken and adds nothing, and the taken job may have read the world before this
-- transaction. Asked again, add_job sees the job as taken, frees its key and adds a
-- new one (a drain of events, a run's resumption or the indexing of a new revision is
-- otherwise lost until something else asks again).
create or replace function app.add_job(task text, payload json, job_key text default null, run_at timestamptz default null,
  queue_name text default null, max_attempts integer default null) returns void
language plpgsql as $$
declare
  added bigint;
begin
  for attempt in 1..3 loop
    added := (graphile_worker.add_job(task, payload, queue_name => queue_name, run_at => run_at, max_attempts => max_attempts,
                                      job_key => job_key)).id;
    if added is not null or job_key is null then
      return;
    end if;
  end loop;
  -- Only a worker taking each new job of the key as it is added could bring this about.
  raise exception 'app.add_job: no % job of key % could be added', task, job_key;
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
