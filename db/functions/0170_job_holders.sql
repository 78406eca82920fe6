-- Releasing the jobs of job runners that died holding them (db/schema/0030_job_holders.sql).
-- Owner-only: called by every job runner (server/core/queue/supervised-runner.ts).

-- A holder is alive while it beats (every 2 s, server/core/queue/supervised-runner.ts):
-- its last beat is less than three beats old.
create or replace function app.job_holder_present(h app.job_holders) returns boolean language sql stable as $$
  select h.beat_at > clock_timestamp() - interval '6 seconds'
$$;

-- Releases the jobs of holders found not beating for absent_for, and forgets them;
-- returns the holders released. The wait covers a live runner whose connection
-- dropped with the rest (a database restart ends every session at once): it connects
-- again within seconds and beats again. A runner killed for good is released on the
-- first sweep after the wait, and the run engine resumes each of its runs from its
-- last committed step.
create or replace function app.release_dead_job_holders(absent_for interval) returns text[] language plpgsql as $$
declare
  released text[];
begin
  update app.job_holders h set missing_since = null
   where missing_since is not null and app.job_holder_present(h);
  update app.job_holders h set missing_since = clock_timestamp()
   where missing_since is null and not app.job_holder_present(h);
  with gone as (
    delete from app.job_holders h
     where missing_since < clock_timestamp() - absent_for and not app.job_holder_present(h)
    returning holder
  ) select coalesce(array_agg(holder), '{}') into released from gone;
  if cardinality(released) > 0 then
    perform graphile_worker.force_unlock_workers(released);
  end if;
  return released;
end $$;
