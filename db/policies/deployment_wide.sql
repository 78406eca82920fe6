-- Deployment-wide tables with no tenant rows. Row-level security is forced with no
-- policy for the request role, so only the SECURITY DEFINER functions that own
-- their use (rate buckets, the cursor key) reach them; the clock is readable.
alter table app.rate_buckets enable row level security;
alter table app.rate_buckets force row level security;
select app.drop_policies('app.rate_buckets');
alter table app.deployment_secrets enable row level security;
alter table app.deployment_secrets force row level security;
select app.drop_policies('app.deployment_secrets');
alter table app.clock enable row level security;
alter table app.clock force row level security;
select app.drop_policies('app.clock');
grant select on app.clock to api;
create policy clock_select on app.clock for select to api using (true);
-- The supported file types are public knowledge.
alter table app.file_types enable row level security;
alter table app.file_types force row level security;
select app.drop_policies('app.file_types');
grant select on app.file_types to api;
create policy file_types_select on app.file_types for select to api using (true);
