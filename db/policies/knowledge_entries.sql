-- Past these policies: none.
-- Knowledge entries belong to the organization: every member reads them; Editors and
-- above write them.
alter table app.knowledge_entries enable row level security;
alter table app.knowledge_entries force row level security;
select app.drop_policies('app.knowledge_entries');
grant select, insert, update, delete on app.knowledge_entries to api;

create policy knowledge_entries_select on app.knowledge_entries for select to api
  using (organization_id = (select app.org_id()));

create policy knowledge_entries_insert on app.knowledge_entries for insert to api
  with check (organization_id = (select app.org_id()) and (select app.has_editing_role())
              and created_by = (select app.user_id()));

create policy knowledge_entries_update on app.knowledge_entries for update to api
  using (organization_id = (select app.org_id()) and (select app.has_editing_role()))
  with check (organization_id = (select app.org_id()));

create policy knowledge_entries_delete on app.knowledge_entries for delete to api
  using (organization_id = (select app.org_id()) and (select app.has_editing_role()));
