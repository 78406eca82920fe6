-- Past these policies: none.
-- Contacts belong to the organization: every member reads them; Editors and above
-- create, change and delete them (one at a time or by bulk import). A run's
-- contact.upsert step writes them on the worker's connection, as the owner.
alter table app.contacts enable row level security;
alter table app.contacts force row level security;
select app.drop_policies('app.contacts');
grant select, insert, delete on app.contacts to api;
-- Who created a contact, and when, is fixed once written.
grant update (external_id, email, name, phone, company, attributes, updated_at) on app.contacts to api;

create policy contacts_select on app.contacts for select to api
  using (organization_id = (select app.org_id()));

create policy contacts_insert on app.contacts for insert to api
  with check (organization_id = (select app.org_id()) and (select app.has_editing_role())
              and created_by = (select app.user_id()) and created_by_run_id is null);

create policy contacts_update on app.contacts for update to api
  using (organization_id = (select app.org_id()) and (select app.has_editing_role()))
  with check (organization_id = (select app.org_id()));

create policy contacts_delete on app.contacts for delete to api
  using (organization_id = (select app.org_id()) and (select app.has_editing_role()));
