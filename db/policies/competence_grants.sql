-- Past these policies: none.
alter table app.competence_grants enable row level security;
alter table app.competence_grants force row level security;
select app.drop_policies('app.competence_grants');
grant select on app.competence_grants to api;

-- Holders see their own grants; owners and admins see the organization's.
create policy competence_grants_select on app.competence_grants for select to api
  using (organization_id = (select app.org_id())
         and (user_id = (select app.user_id()) or (select app.is_admin())));
