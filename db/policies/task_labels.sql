-- A project's label catalog exists for whoever sees the project; labels join it when
-- an editor of the project first uses them on a task.
-- Past these policies: none.
alter table app.task_labels enable row level security;
alter table app.task_labels force row level security;
select app.drop_policies('app.task_labels');
grant select, insert on app.task_labels to api;

create policy task_labels_select on app.task_labels for select to api
  using (organization_id = (select app.org_id())
         and ((select app.is_admin()) or project_id in (select app.granted_project_ids())));

create policy task_labels_insert on app.task_labels for insert to api
  with check (organization_id = (select app.org_id()) and app.can_edit_project(project_id));
