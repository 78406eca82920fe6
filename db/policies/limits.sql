-- The service's limits (db/limits.json, loaded by the migrator) are public
-- knowledge, read through app.limit(name); the migrator alone writes them.
-- Past these policies: none.
alter table app.limits enable row level security;
alter table app.limits force row level security;
select app.drop_policies('app.limits');
grant select on app.limits to api;
create policy limits_select on app.limits for select to api using (true);
