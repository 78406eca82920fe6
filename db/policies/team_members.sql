-- Past these policies: app.task_notify (whether another member's teams let them see a
-- task's project, before they are told of a mention or an assignment there).
alter table app.team_members enable row level security;
alter table app.team_members force row level security;
select app.drop_policies('app.team_members');
grant select on app.team_members to api;

create policy team_members_select on app.team_members for select to api
  using (organization_id = (select app.org_id()));
