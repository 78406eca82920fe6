-- The last task number of a project: drawn by whoever may create tasks in it.
-- Past these policies: none.
alter table app.task_counters enable row level security;
alter table app.task_counters force row level security;
select app.drop_policies('app.task_counters');
grant select, insert on app.task_counters to api;
grant update (last_number) on app.task_counters to api;

create policy task_counters_select on app.task_counters for select to api
  using (organization_id = (select app.org_id()) and app.can_edit_project(project_id));

create policy task_counters_insert on app.task_counters for insert to api
  with check (organization_id = (select app.org_id()) and app.can_edit_project(project_id));

create policy task_counters_update on app.task_counters for update to api
  using (organization_id = (select app.org_id()) and app.can_edit_project(project_id))
  with check (organization_id = (select app.org_id()) and app.can_edit_project(project_id));
