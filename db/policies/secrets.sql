-- Past these policies: none.
alter table app.secrets enable row level security;
alter table app.secrets force row level security;
select app.drop_policies('app.secrets');
grant select (organization_id, name, created_at) on app.secrets to api;

-- Names are visible to the organization (agents reference them); values never are.
create policy secrets_select on app.secrets for select to api
  using (organization_id = (select app.org_id()));
