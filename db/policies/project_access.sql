-- Past these policies: app.task_notify (whether another member's grants let them see a
-- task's project, before they are told of a mention or an assignment there).
alter table app.project_access enable row level security;
alter table app.project_access force row level security;
select app.drop_policies('app.project_access');
grant select, insert, delete on app.project_access to api;

-- Admins see every grant of the organization; others see the grants that reach them.
create policy project_access_select on app.project_access for select to api
  using (organization_id = (select app.org_id())
         and ((select app.is_admin())
              or user_id = (select app.user_id())
              or team_id in (select t from app.my_team_ids() t)));

-- Admins manage grants. Anyone else may write only the creator's own edit grant on a
-- project they created, as project creation does.
create policy project_access_insert on app.project_access for insert to api
  with check (organization_id = (select app.org_id())
              and ((select app.is_admin())
                   or (user_id = (select app.user_id()) and level = 'edit' and app.created_by_caller(project_id))));

create policy project_access_delete on app.project_access for delete to api
  using (organization_id = (select app.org_id()) and (select app.is_admin()));
