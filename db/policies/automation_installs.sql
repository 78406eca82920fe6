-- An install is seen by whoever sees its project; developers with edit access to
-- the project install and remove.
-- Past these policies: app.automation_install_projects (a run start binds to every
-- install of its automation, also in projects the caller cannot see; the caller
-- learns how many there are, never which).
-- Also past them: app.webhook_deliver (the caller-less webhook path: a delivery's
-- token names the trigger, whose automation, installs and projects it reads).
alter table app.automation_installs enable row level security;
alter table app.automation_installs force row level security;
select app.drop_policies('app.automation_installs');
grant select, insert, delete on app.automation_installs to api;

create policy automation_installs_select on app.automation_installs for select to api
  using (organization_id = (select app.org_id())
         and ((select app.is_admin()) or project_id in (select app.granted_project_ids())));

create policy automation_installs_insert on app.automation_installs for insert to api
  with check (organization_id = (select app.org_id()) and (select app.has_developer_role())
              and app.can_edit_project(project_id));

create policy automation_installs_delete on app.automation_installs for delete to api
  using (organization_id = (select app.org_id()) and (select app.has_developer_role())
         and app.can_edit_project(project_id));
