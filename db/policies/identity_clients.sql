-- Applications registered with the identity issuer, one organization each.
-- Past these policies: app.issuer_client (the issuer reads a client by its id at every
-- authorization and token request, when no caller exists) and app.issuer_account (the
-- client's organization decides what the issuer says about a person).
alter table app.identity_clients enable row level security;
alter table app.identity_clients force row level security;
select app.drop_policies('app.identity_clients');
-- The secret's hash is never readable by the request role.
grant select (organization_id, key, client_id, name, redirect_uri, disabled, created_by, created_at, updated_at)
  on app.identity_clients to api;
grant insert (organization_id, key, client_id, name, redirect_uri, secret_hash, created_by) on app.identity_clients to api;
grant update (secret_hash, disabled, updated_at) on app.identity_clients to api;

-- Owners and admins of the organization, signed in to the app (never an API key),
-- manage its applications.
create policy identity_clients_select on app.identity_clients for select to api
  using (organization_id = (select app.org_id()) and (select app.is_admin()));

create policy identity_clients_insert on app.identity_clients for insert to api
  with check (organization_id = (select app.org_id()) and (select app.is_admin())
              and created_by = (select app.user_id())
              and coalesce(current_setting('app.session_id', true), '') <> '');

create policy identity_clients_update on app.identity_clients for update to api
  using (organization_id = (select app.org_id()) and (select app.is_admin())
         and coalesce(current_setting('app.session_id', true), '') <> '')
  with check (organization_id = (select app.org_id()));
