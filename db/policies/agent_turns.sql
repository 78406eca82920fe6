-- An agent turn belongs to its run: visible where the run is (its prompt and answer
-- are in the run's trace already). Only the engine (the worker, on the owner's
-- connection) creates, runs and settles turns; a request writes none.
-- Past these policies: none.
alter table app.agent_turns enable row level security;
alter table app.agent_turns force row level security;
select app.drop_policies('app.agent_turns');
grant select on app.agent_turns to api;

create policy agent_turns_select on app.agent_turns for select to api
  using (organization_id = (select app.org_id()) and app.can_read_run(run_id));
