-- Past these policies: app.uploads_lapsed (whether any upload of the organization, not
-- only the caller's, lapsed and is due for sweeping; it answers yes or no).
alter table app.uploads enable row level security;
alter table app.uploads force row level security;
select app.drop_policies('app.uploads');
grant select, insert, update on app.uploads to api;

-- An upload is its preparer's: only they see it and bind it, and only while they can
-- edit its project (an organization upload, for a hub document: while they hold an
-- editing role). Lapsed uploads are removed by the worker, not by callers.
create policy uploads_select on app.uploads for select to api
  using (organization_id = (select app.org_id()) and created_by = (select app.user_id()));

create policy uploads_insert on app.uploads for insert to api
  with check (organization_id = (select app.org_id()) and created_by = (select app.user_id())
              and case when project_id is null then (select app.has_editing_role()) else app.can_edit_project(project_id) end);

create policy uploads_update on app.uploads for update to api
  using (organization_id = (select app.org_id()) and created_by = (select app.user_id())
         and case when project_id is null then (select app.has_editing_role()) else app.can_edit_project(project_id) end);
