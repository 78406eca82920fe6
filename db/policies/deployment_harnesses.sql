-- The harnesses this deployment runs are public knowledge to every caller (GET
-- /models lists them); the operator maintains the list on the owner's connection.
-- Past these policies: none.
alter table app.deployment_harnesses enable row level security;
alter table app.deployment_harnesses force row level security;
select app.drop_policies('app.deployment_harnesses');
grant select on app.deployment_harnesses to api;
create policy deployment_harnesses_select on app.deployment_harnesses for select to api using (true);
