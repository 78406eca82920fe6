-- Past these policies: app.project_key_holding_external_id (PROJECT_DUPLICATE_EXTERNAL_ID
-- names the key of the project holding an externalItemId, which the caller may not
-- see; it answers the key alone).
-- Also past them: app.task_notify (a task notification names the task's project and
-- checks whether its recipient created it).
-- Also past them: app.webhook_deliver (the caller-less webhook path: a delivery's
-- token names the trigger, whose automation, installs and projects it reads).
alter table app.projects enable row level security;
alter table app.projects force row level security;
select app.drop_policies('app.projects');
grant select, insert, delete on app.projects to api;
-- Legal holds and authorship are set by operators and creation, never by an update.
grant update (name, description, external_item_id, archived_at, updated_at) on app.projects to api;

-- A project exists for the caller only with read or edit access to it (its creator
-- holds an edit grant from the moment it exists).
create policy projects_select on app.projects for select to api
  using (organization_id = (select app.org_id())
         and ((select app.is_admin())
              or created_by = (select app.user_id())
              or id in (select pa.project_id from app.project_access pa
                         where pa.organization_id = (select app.org_id())
                           and (pa.user_id = (select app.user_id())
                                or pa.team_id in (select t from app.my_team_ids() t)))));

-- Editors and above create projects in the selected organization.
create policy projects_insert on app.projects for insert to api
  with check (organization_id = (select app.org_id()) and (select app.has_editing_role())
              and created_by = (select app.user_id()) and legal_hold_at is null);

create policy projects_update on app.projects for update to api
  using (organization_id = (select app.org_id()) and app.can_edit_project(id))
  with check (organization_id = (select app.org_id()));

create policy projects_delete on app.projects for delete to api
  using (organization_id = (select app.org_id()) and app.can_edit_project(id));
