-- Past these policies: app.sign_in_lookup (the person signing in, and their password
-- hash, before any caller exists), app.issuer_account (the identity issuer's claims
-- about the person a token is for, read with no caller).
alter table app.users enable row level security;
alter table app.users force row level security;
select app.drop_policies('app.users');
grant select (id, email, email_verified, name, created_at) on app.users to api;

-- A caller sees themself and the members of the selected organization.
-- The password hash is not granted to the request role at all.
create policy users_select on app.users for select to api
  using (id = (select app.user_id())
         or id in (select m.user_id from app.memberships m where m.organization_id = (select app.org_id())));
