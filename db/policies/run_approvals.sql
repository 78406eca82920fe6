-- Approvals belong to their run: visible where the run is, decided by any member who
-- sees it, in their own name, voided by a cancel (the developer capability). The
-- engine (the worker) creates them.
-- Past these policies: none.
alter table app.run_approvals enable row level security;
alter table app.run_approvals force row level security;
select app.drop_policies('app.run_approvals');
grant select on app.run_approvals to api;
grant update (status, comment, decided_by, decided_at) on app.run_approvals to api;

create policy run_approvals_select on app.run_approvals for select to api
  using (organization_id = (select app.org_id()) and app.can_read_run(run_id));

create policy run_approvals_decide on app.run_approvals for update to api
  using (organization_id = (select app.org_id()) and app.can_read_run(run_id) and status = 'pending')
  with check (status in ('approved', 'rejected') and decided_by = (select app.user_id()) and decided_at is not null);

create policy run_approvals_void on app.run_approvals for update to api
  using (organization_id = (select app.org_id()) and (select app.has_developer_role()) and app.can_read_run(run_id)
         and status = 'pending')
  with check ((select app.has_developer_role()) and status = 'void'
              and comment is null and decided_by is null and decided_at is null);
