-- Worker heartbeats (db/schema/0029_worker_heartbeats.sql): written by the worker
-- and read by `admin status`, both on the owner connection: no grant and no policy.
-- Past these policies: none.
alter table app.worker_heartbeats enable row level security;
alter table app.worker_heartbeats force row level security;
select app.drop_policies('app.worker_heartbeats');
