-- Folders exist for whoever can see their project; editors of the project change them.
-- Past these policies: none.
alter table app.folders enable row level security;
alter table app.folders force row level security;
select app.drop_policies('app.folders');
grant select, insert, delete on app.folders to api;

create policy folders_select on app.folders for select to api
  using (organization_id = (select app.org_id())
         and ((select app.is_admin()) or project_id in (select app.granted_project_ids())));

create policy folders_insert on app.folders for insert to api
  with check (organization_id = (select app.org_id()) and app.can_edit_project(project_id)
              and created_by = (select app.user_id()));

create policy folders_delete on app.folders for delete to api
  using (organization_id = (select app.org_id()) and app.can_edit_project(project_id));
