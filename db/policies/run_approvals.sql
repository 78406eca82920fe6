alter table app.run_approvals enable row level security;
alter table app.run_approvals force row level security;
select app.drop_policies('app.run_approvals');
grant select, update on app.run_approvals to api;

-- Approvals belong to their run: visible and decidable where the run is visible.
-- The engine (the worker) creates them.
create policy run_approvals_select on app.run_approvals for select to api
  using (organization_id = (select app.org_id())
         and run_id in (select r.id from app.runs r where r.organization_id = (select app.org_id())));

create policy run_approvals_update on app.run_approvals for update to api
  using (organization_id = (select app.org_id())
         and run_id in (select r.id from app.runs r where r.organization_id = (select app.org_id())));
