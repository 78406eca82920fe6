-- Past these policies: none.
alter table app.audit_log enable row level security;
alter table app.audit_log force row level security;
select app.drop_policies('app.audit_log');
grant select, insert on app.audit_log to api;

-- Operations append rows as the caller; only owners and admins read them back.
create policy audit_log_insert on app.audit_log for insert to api
  with check (organization_id = (select app.org_id()) and actor_user_id = (select app.user_id()));

create policy audit_log_select on app.audit_log for select to api
  using (organization_id = (select app.org_id()) and (select app.is_admin()));
