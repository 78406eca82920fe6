-- Worker heartbeats: each worker process writes its row every few seconds while it
-- runs and deletes it when it stops cleanly, so `admin status` can say how many
-- workers are alive without asking the job queue (whose locks say only who holds a
-- job, not who is waiting for one). A row left by a process that died goes stale
-- and is reported as such. The owner's alone: no grant and no policy
-- (db/policies/worker_heartbeats.sql).

create table app.worker_heartbeats (
  -- Chosen by the process at start: host, pid and a random part, so a restarted
  -- process never takes over its predecessor's row.
  worker_id text primary key check (length(worker_id) between 1 and 200),
  host text not null,
  pid integer not null,
  concurrency integer not null check (concurrency > 0),
  started_at timestamptz not null default now(),
  -- The database's clock, not app.now(): liveness is measured against the same clock
  -- by every process, whatever the machine's.
  beat_at timestamptz not null default now()
);
