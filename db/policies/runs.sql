alter table app.runs enable row level security;
alter table app.runs force row level security;
select app.drop_policies('app.runs');
grant select, insert, update, delete on app.runs to api;

-- Runs of the organization exist for its members; a run in a project only for
-- those who see the project. The caller starts runs as themself; live runs,
-- cancels and deletions need the developer capability (checked by the functions).
create policy runs_select on app.runs for select to api
  using (organization_id = (select app.org_id())
         and (project_id is null
              or project_id in (select p.id from app.projects p where p.organization_id = (select app.org_id()))));

create policy runs_insert on app.runs for insert to api
  with check (organization_id = (select app.org_id()) and started_by = (select app.user_id())
              and (mode = 'mock' or (select app.has_developer_role())));

-- Cancels (developers) and resumptions after an answer (any member who sees the run).
create policy runs_update on app.runs for update to api
  using (organization_id = (select app.org_id())
         and (project_id is null
              or project_id in (select p.id from app.projects p where p.organization_id = (select app.org_id()))));

create policy runs_delete on app.runs for delete to api
  using (organization_id = (select app.org_id()) and (select app.has_developer_role())
         and status in ('completed', 'failed', 'cancelled'));
