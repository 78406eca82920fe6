-- Who holds jobs in the queue. A job runner locks the jobs it takes under an id of its
-- own (graphile-worker's pool id) and registers that id here; while it lives, it beats
-- (beat_at) every few seconds. A holder that stopped beating (its process was killed)
-- has its jobs released for live runners (app.release_dead_job_holders), instead of
-- waiting out graphile-worker's four-hour lock timeout. A beat rather than a session
-- seen in pg_stat_activity, because behind a transaction pooler no session is the
-- runner's own. Row-level security is in db/policies/job_holders.sql.

create table app.job_holders (
  holder text primary key,
  registered_at timestamptz not null default now(),
  beat_at timestamptz not null default now(),
  -- When a sweep first found the holder not beating; cleared by its next beat.
  missing_since timestamptz
);
