-- Competence grants of the organization. Owners and admins grant and revoke them in
-- the app (db/functions/0115_competence_grants.sql); a revocation only sets revoked_at
-- and revoked_by, and no request deletes a grant: the rows are the audit trail.
-- Past these policies: none.
alter table app.competence_grants enable row level security;
alter table app.competence_grants force row level security;
select app.drop_policies('app.competence_grants');
grant select, insert on app.competence_grants to api;
-- Whom, what, the evidence and the expiry are fixed once granted.
grant update (revoked_at, revoked_by) on app.competence_grants to api;

-- Holders see their own grants; owners and admins see the organization's.
create policy competence_grants_select on app.competence_grants for select to api
  using (organization_id = (select app.org_id())
         and (user_id = (select app.user_id()) or (select app.is_admin())));

-- Only owners and admins grant, in their own name.
create policy competence_grants_insert on app.competence_grants for insert to api
  with check (organization_id = (select app.org_id()) and (select app.is_admin())
              and granted_by = (select app.user_id()));

-- Only owners and admins revoke (also through the memberships trigger when they
-- remove or disable a member).
create policy competence_grants_update on app.competence_grants for update to api
  using (organization_id = (select app.org_id()) and (select app.is_admin()))
  with check (organization_id = (select app.org_id()) and (select app.is_admin()));
