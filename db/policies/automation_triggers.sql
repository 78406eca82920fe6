-- An automation's trigger is read like its automation, by every member; binding,
-- changing and removing it needs the developer capability. The token hash is never
-- part of a read (app.trigger_json).
-- Past these policies: app.webhook_deliver (the caller-less webhook path: it finds the
-- trigger by its token hash, across organizations, before any caller exists).
alter table app.automation_triggers enable row level security;
alter table app.automation_triggers force row level security;
select app.drop_policies('app.automation_triggers');
grant select, insert, update, delete on app.automation_triggers to api;

create policy automation_triggers_select on app.automation_triggers for select to api
  using (organization_id = (select app.org_id()));

create policy automation_triggers_insert on app.automation_triggers for insert to api
  with check (organization_id = (select app.org_id()) and (select app.has_developer_role()));

create policy automation_triggers_update on app.automation_triggers for update to api
  using (organization_id = (select app.org_id()) and (select app.has_developer_role()))
  with check (organization_id = (select app.org_id()) and (select app.has_developer_role()));

create policy automation_triggers_delete on app.automation_triggers for delete to api
  using (organization_id = (select app.org_id()) and (select app.has_developer_role()));
