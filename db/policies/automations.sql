-- Past these policies: app.webhook_deliver (the caller-less webhook path: a delivery's
-- token names the trigger, whose automation, installs and projects it reads).
alter table app.automations enable row level security;
alter table app.automations force row level security;
select app.drop_policies('app.automations');
grant select, insert, update, delete on app.automations to api;

-- Members read the organization's automations; authoring (create, save, deploy,
-- delete) needs the developer capability.
create policy automations_select on app.automations for select to api
  using (organization_id = (select app.org_id()));

create policy automations_insert on app.automations for insert to api
  with check (organization_id = (select app.org_id()) and (select app.has_developer_role()));

create policy automations_update on app.automations for update to api
  using (organization_id = (select app.org_id()) and (select app.has_developer_role()));

create policy automations_delete on app.automations for delete to api
  using (organization_id = (select app.org_id()) and (select app.has_developer_role()));
