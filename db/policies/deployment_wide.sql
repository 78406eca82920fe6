-- Deployment-wide tables with no tenant rows. Row-level security is forced with no
-- policy for the request role, so only the SECURITY DEFINER functions that own
-- their use (rate buckets, the cursor key) reach them; the clock is readable.
select app.reset_policies('app.rate_buckets');
select app.reset_policies('app.deployment_secrets');
select app.reset_policies('app.clock');
grant select on app.clock to api;
create policy clock_select on app.clock for select to api using (true);
