-- Questions belong to their run: visible where the run is, answered by any member who
-- sees it in their own name (as another actor only with the act-as capability),
-- voided by a cancel (the developer capability). The engine (the worker) creates them.
-- Past these policies: none.
alter table app.run_asks enable row level security;
alter table app.run_asks force row level security;
select app.drop_policies('app.run_asks');
grant select on app.run_asks to api;
grant update (status, answer, answered_by, actor, answered_at) on app.run_asks to api;

create policy run_asks_select on app.run_asks for select to api
  using (organization_id = (select app.org_id()) and app.can_read_run(run_id));

create policy run_asks_answer on app.run_asks for update to api
  using (organization_id = (select app.org_id()) and app.can_read_run(run_id) and status = 'open')
  with check (status = 'answered' and answered_by = (select app.user_id()) and answered_at is not null
              and (actor is null or (select (app.capabilities()->>'actAs')::boolean)));

create policy run_asks_void on app.run_asks for update to api
  using (organization_id = (select app.org_id()) and (select app.has_developer_role()) and app.can_read_run(run_id)
         and status = 'open')
  with check ((select app.has_developer_role()) and status = 'void'
              and answer is null and answered_by is null and actor is null and answered_at is null);
