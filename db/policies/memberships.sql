-- Past these policies: app.authenticate (selects the organization by the key holder's
-- membership before any caller exists), app.selectable_organizations (the
-- organizations a key's user may select, named in the refusals that need them),
-- app.task_notify (whether the member a task notification is for is active and sees
-- the task's project), app.issuer_account (whether the person a token is for is an
-- active member of the client's organization, decided with no caller).
alter table app.memberships enable row level security;
alter table app.memberships force row level security;
select app.drop_policies('app.memberships');
grant select on app.memberships to api;

-- The selected organization's roster, and the caller's own memberships elsewhere.
create policy memberships_select on app.memberships for select to api
  using (organization_id = (select app.org_id()) or user_id = (select app.user_id()));
