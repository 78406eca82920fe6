-- Past these policies: none.
-- Products belong to the organization: every member reads them; Editors and above
-- create, change and delete them.
alter table app.products enable row level security;
alter table app.products force row level security;
select app.drop_policies('app.products');
grant select, insert, delete on app.products to api;
-- Who created a product, and when, is fixed once written.
grant update (external_id, name, description, sku, price, currency, attributes, updated_at) on app.products to api;

create policy products_select on app.products for select to api
  using (organization_id = (select app.org_id()));

create policy products_insert on app.products for insert to api
  with check (organization_id = (select app.org_id()) and (select app.has_editing_role())
              and created_by = (select app.user_id()));

create policy products_update on app.products for update to api
  using (organization_id = (select app.org_id()) and (select app.has_editing_role()))
  with check (organization_id = (select app.org_id()));

create policy products_delete on app.products for delete to api
  using (organization_id = (select app.org_id()) and (select app.has_editing_role()));
