-- Past these policies: none.
alter table app.models enable row level security;
alter table app.models force row level security;
select app.drop_policies('app.models');
grant select on app.models to api;

create policy models_select on app.models for select to api
  using (organization_id = (select app.org_id()));
