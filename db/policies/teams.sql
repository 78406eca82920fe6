select app.reset_policies('app.teams');
grant select on app.teams to api;

create policy teams_select on app.teams for select to api
  using (organization_id = (select app.org_id()));
