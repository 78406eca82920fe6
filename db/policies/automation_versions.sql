-- Past these policies: app.webhook_deliver (the caller-less webhook path: a delivery's
-- token names the trigger, whose automation, installs and projects it reads).
alter table app.automation_versions enable row level security;
alter table app.automation_versions force row level security;
select app.drop_policies('app.automation_versions');
grant select, insert, update on app.automation_versions to api;

-- Versions are read like their automation and written by developers (new versions,
-- test verdicts). They are never deleted on their own; they go with the automation.
create policy automation_versions_select on app.automation_versions for select to api
  using (organization_id = (select app.org_id()));

create policy automation_versions_insert on app.automation_versions for insert to api
  with check (organization_id = (select app.org_id()) and (select app.has_developer_role()));

create policy automation_versions_update on app.automation_versions for update to api
  using (organization_id = (select app.org_id()) and (select app.has_developer_role()));
