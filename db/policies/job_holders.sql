-- The job runners that hold jobs in the queue (db/schema/0030_job_holders.sql). The
-- runners' alone, on the owner connection: no grant and no policy.
-- Past these policies: none.
alter table app.job_holders enable row level security;
alter table app.job_holders force row level security;
select app.drop_policies('app.job_holders');
