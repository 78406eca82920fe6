select app.reset_policies('app.models');
grant select on app.models to api;

create policy models_select on app.models for select to api
  using (organization_id = (select app.org_id()));
