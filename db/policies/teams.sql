-- Past these policies: none.
alter table app.teams enable row level security;
alter table app.teams force row level security;
select app.drop_policies('app.teams');
grant select on app.teams to api;

create policy teams_select on app.teams for select to api
  using (organization_id = (select app.org_id()));
