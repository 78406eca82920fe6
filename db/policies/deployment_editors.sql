-- Past these policies: none.
alter table app.deployment_editors enable row level security;
alter table app.deployment_editors force row level security;
select app.drop_policies('app.deployment_editors');
grant select on app.deployment_editors to api;

-- Operators maintain the allowlist; a caller can only learn whether they are on it.
create policy deployment_editors_select on app.deployment_editors for select to api
  using (user_id = (select app.user_id()));
