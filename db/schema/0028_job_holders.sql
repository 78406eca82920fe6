-- Who holds jobs in the queue. A job runner locks the jobs it takes under an id of its
-- own (graphile-worker's pool id) and registers that id here; while it lives, it keeps
-- a connection named after the id open (application_name 'tale-jobs:<holder>'). A
-- holder whose connection is gone (its process was killed: the kernel closed the
-- socket, so the server ended the session) has its jobs released for live runners
-- (app.release_dead_job_holders), instead of waiting out graphile-worker's four-hour
-- lock timeout. Row-level security is in db/policies/job_holders.sql.

create table app.job_holders (
  holder text primary key,
  registered_at timestamptz not null default now(),
  -- When a sweep first found no connection of the holder; cleared when one is back.
  missing_since timestamptz
);
