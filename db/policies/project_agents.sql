-- Agents exist for whoever sees their project. Editors of the project create, change
-- and delete them; who may change an agent's secret grants (owners and admins) is
-- decided by app.agent_save, since a policy cannot compare a row with its previous
-- version. Runs read agents on the worker's connection (app.agent_for_run).
-- Past these policies: none.
alter table app.project_agents enable row level security;
alter table app.project_agents force row level security;
select app.drop_policies('app.project_agents');
grant select, insert, delete on app.project_agents to api;
-- The project, the creator and the creation are fixed once written.
grant update (name, harness, model, model_provider, skills, connectors, tools, secrets, instructions, updated_at)
  on app.project_agents to api;

create policy project_agents_select on app.project_agents for select to api
  using (organization_id = (select app.org_id())
         and ((select app.is_admin()) or project_id in (select app.granted_project_ids())));

create policy project_agents_insert on app.project_agents for insert to api
  with check (organization_id = (select app.org_id()) and app.can_edit_project(project_id)
              and created_by = (select app.user_id()));

create policy project_agents_update on app.project_agents for update to api
  using (organization_id = (select app.org_id()) and app.can_edit_project(project_id))
  with check (organization_id = (select app.org_id()) and app.can_edit_project(project_id));

create policy project_agents_delete on app.project_agents for delete to api
  using (organization_id = (select app.org_id()) and app.can_edit_project(project_id));
