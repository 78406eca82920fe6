-- Comments exist for whoever sees the task's project; every reader of the project may
-- comment, in their own name. A run's comments are written on the worker's connection.
-- Past these policies: none.
alter table app.task_comments enable row level security;
alter table app.task_comments force row level security;
select app.drop_policies('app.task_comments');
grant select, insert on app.task_comments to api;

create policy task_comments_select on app.task_comments for select to api
  using (organization_id = (select app.org_id())
         and ((select app.is_admin()) or project_id in (select app.granted_project_ids())));

create policy task_comments_insert on app.task_comments for insert to api
  with check (organization_id = (select app.org_id()) and app.can_read_project(project_id)
              and author_type = 'user' and author_user_id = (select app.user_id())
              and author_run_id is null and source_key is null);
