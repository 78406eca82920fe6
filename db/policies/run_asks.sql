alter table app.run_asks enable row level security;
alter table app.run_asks force row level security;
select app.drop_policies('app.run_asks');
grant select, update on app.run_asks to api;

-- Questions belong to their run: visible and answerable where the run is visible.
-- The engine (the worker) creates them.
create policy run_asks_select on app.run_asks for select to api
  using (organization_id = (select app.org_id())
         and run_id in (select r.id from app.runs r where r.organization_id = (select app.org_id())));

create policy run_asks_update on app.run_asks for update to api
  using (organization_id = (select app.org_id())
         and run_id in (select r.id from app.runs r where r.organization_id = (select app.org_id())));
