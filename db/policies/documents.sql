-- Project files exist for whoever can see their project; editors of the project
-- bind, change and delete them. Documents outside any project (released by a
-- detaching project delete, or in retention after a cascading one) belong to the
-- organization. Hub documents (kind 'document', never in a project) are the
-- organization's: every member reads them, Editors and above write them.
-- Past these policies: none.
alter table app.documents enable row level security;
alter table app.documents force row level security;
select app.drop_policies('app.documents');
grant select, insert, update, delete on app.documents to api;

create policy documents_select on app.documents for select to api
  using (organization_id = (select app.org_id())
         and (project_id is null or (select app.is_admin()) or project_id in (select app.granted_project_ids())));

create policy documents_insert on app.documents for insert to api
  with check (organization_id = (select app.org_id()) and created_by = (select app.user_id())
              and case kind when 'document' then (select app.has_editing_role()) else app.can_edit_project(project_id) end);

-- A project delete moves its files out of the project (released or retained).
create policy documents_update on app.documents for update to api
  using (organization_id = (select app.org_id())
         and case kind when 'document' then (select app.has_editing_role()) else app.can_edit_project(project_id) end)
  with check (organization_id = (select app.org_id())
              and (kind = 'document' or project_id is null or app.can_edit_project(project_id)));

create policy documents_delete on app.documents for delete to api
  using (organization_id = (select app.org_id())
         and case kind when 'document' then (select app.has_editing_role()) else app.can_edit_project(project_id) end);
