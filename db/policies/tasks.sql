-- Tasks exist for whoever sees their project. Editors of the project create them and
-- change them (board moves, archive, assignee, review); a run's action step writes
-- them on the worker's connection.
-- Past these policies: none.
alter table app.tasks enable row level security;
alter table app.tasks force row level security;
select app.drop_policies('app.tasks');
grant select, insert on app.tasks to api;
-- The natural key, the number and the creation are fixed once written.
grant update (title, description, label_ids, external_url, external_state, status, status_set_by, status_changed_at,
              assignee_user_id, assignee_automation_id, review_requested_at, review_requested_by, review_actor,
              archived_at, updated_at) on app.tasks to api;

create policy tasks_select on app.tasks for select to api
  using (organization_id = (select app.org_id())
         and ((select app.is_admin()) or project_id in (select app.granted_project_ids())));

create policy tasks_insert on app.tasks for insert to api
  with check (organization_id = (select app.org_id()) and app.can_edit_project(project_id)
              and created_by = (select app.user_id()) and created_by_run_id is null);

create policy tasks_update on app.tasks for update to api
  using (organization_id = (select app.org_id()) and app.can_edit_project(project_id))
  with check (organization_id = (select app.org_id()) and app.can_edit_project(project_id));
