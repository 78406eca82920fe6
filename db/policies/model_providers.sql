-- Past these policies: none.
alter table app.model_providers enable row level security;
alter table app.model_providers force row level security;
select app.drop_policies('app.model_providers');
grant select (organization_id, slug, kind, base_url, created_at) on app.model_providers to api;

-- Provider keys are never granted to the request role.
create policy model_providers_select on app.model_providers for select to api
  using (organization_id = (select app.org_id()));
