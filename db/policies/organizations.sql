-- Past these policies: app.authenticate (resolves X-Organization-Slug before any caller
-- exists), app.selectable_organizations (the organizations a key's user may select),
-- app.issuer_account (the organization claim and second-factor rule of a client's
-- organization, read with no caller).
alter table app.organizations enable row level security;
alter table app.organizations force row level security;
select app.drop_policies('app.organizations');
grant select on app.organizations to api;

-- Members see the organizations they belong to (for /me and organization lists).
create policy organizations_select on app.organizations for select to api
  using (id = (select app.org_id())
         or id in (select m.organization_id from app.memberships m
                    where m.user_id = (select app.user_id()) and not m.disabled));
