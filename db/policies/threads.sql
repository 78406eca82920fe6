-- A thread exists for its owner alone, and a project thread only while the owner can
-- read its project (project readers may chat). The owner makes threads and moves a
-- thread's generation (a send, a stop); the worker settles it on the owner's connection.
-- Past these policies: none.
alter table app.threads enable row level security;
alter table app.threads force row level security;
select app.drop_policies('app.threads');
grant select, insert on app.threads to api;
grant update (generation_status, last_message_id, updated_at) on app.threads to api;

create policy threads_select on app.threads for select to api
  using (organization_id = (select app.org_id()) and owner_id = (select app.user_id())
         and (project_id is null or (select app.is_admin()) or project_id in (select app.granted_project_ids())));

create policy threads_insert on app.threads for insert to api
  with check (organization_id = (select app.org_id()) and owner_id = (select app.user_id())
              and (project_id is null or app.can_read_project(project_id)));

create policy threads_update on app.threads for update to api
  using (organization_id = (select app.org_id()) and owner_id = (select app.user_id()))
  with check (organization_id = (select app.org_id()) and owner_id = (select app.user_id()));
