-- Browser sessions: every member of the organization reads what a session may show
-- (name, domains, cookie count, expiry, revocation); operators on the deployment
-- allowlist (the deploymentEditor capability, app.is_deployment_editor) import and
-- revoke them. The sealed cookies are readable by no request: the request role has no
-- SELECT on the column, only the owner's connection reads it.
-- Past these policies: none.
alter table app.browser_sessions enable row level security;
alter table app.browser_sessions force row level security;
select app.drop_policies('app.browser_sessions');
grant select (organization_id, id, name, domains, cookie_count, expires_at, key_id, created_by, created_at, revoked_at, revoked_by)
  on app.browser_sessions to api;
grant insert on app.browser_sessions to api;
-- A revocation sets revoked_at and revoked_by and erases the sealed cookies; nothing
-- else changes, and no request deletes a session: the rows are the record.
grant update (sealed, revoked_at, revoked_by) on app.browser_sessions to api;

create policy browser_sessions_select on app.browser_sessions for select to api
  using (organization_id = (select app.org_id()));

create policy browser_sessions_insert on app.browser_sessions for insert to api
  with check (organization_id = (select app.org_id()) and (select app.is_deployment_editor())
              and created_by = (select app.user_id()) and revoked_at is null);

create policy browser_sessions_update on app.browser_sessions for update to api
  using (organization_id = (select app.org_id()) and (select app.is_deployment_editor()))
  with check (organization_id = (select app.org_id()) and sealed is null and revoked_at is not null);
