select app.reset_policies('app.team_members');
grant select on app.team_members to api;

create policy team_members_select on app.team_members for select to api
  using (organization_id = (select app.org_id()));
