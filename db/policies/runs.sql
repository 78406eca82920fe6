-- Runs of the organization exist for its members; a run in a project only for those
-- who see the project (a set read once per statement: db/functions/0005_access.sql
-- says why it is not a per-row call). The caller starts runs as themself, live ones with the
-- developer capability, or a task's workflow with edit access to the task's project. Two changes reach a run over REST, each held here to its
-- rule and to the columns it writes: a resumption after a person's answer (any
-- member who sees the run) and a cancel (the developer capability). Everything else
-- about a run is the engine's, on the owner's connection.
-- Past these policies: app.trigger_last_run (a trigger's last run id and instant, the
-- same for every member who reads the trigger; the run itself stays behind these).
alter table app.runs enable row level security;
alter table app.runs force row level security;
select app.drop_policies('app.runs');
grant select, insert, delete on app.runs to api;
grant update (status, waiting_for, detail, resume, resume_at, cancel_requested_at, finished_at, updated_at)
  on app.runs to api;

create policy runs_select on app.runs for select to api
  using (organization_id = (select app.org_id())
         and (project_id is null or (select app.is_admin()) or project_id in (select app.granted_project_ids())));

create policy runs_insert on app.runs for insert to api
  with check (organization_id = (select app.org_id()) and started_by = (select app.user_id())
              and (project_id is null or app.can_read_project(project_id))
              and (mode = 'mock' or (select app.has_developer_role())
                   or (task_id is not null and started_via = 'task' and app.project_access(project_id) = 'edit'
                       and exists (select 1 from app.tasks t
                                    where t.organization_id = runs.organization_id and t.id = runs.task_id
                                      and t.project_id = runs.project_id))));

-- A run parked on an approval or a question goes back to the queue carrying an
-- answer the caller put on record (app.resumes_with_recorded_answer), and nothing else.
create policy runs_resume on app.runs for update to api
  using (organization_id = (select app.org_id())
         and (project_id is null or (select app.is_admin()) or project_id in (select app.granted_project_ids()))
         and status = 'waiting' and waiting_for in ('approval', 'ask'))
  with check (status = 'queued' and waiting_for is null and cancel_requested_at is null and finished_at is null
              and app.resumes_with_recorded_answer(id, resume));

-- A live run is cancelled (queued or waiting) or asked to stop at its next step
-- boundary (running): the developer capability.
create policy runs_cancel on app.runs for update to api
  using (organization_id = (select app.org_id()) and (select app.has_developer_role())
         and (project_id is null or (select app.is_admin()) or project_id in (select app.granted_project_ids()))
         and status in ('queued', 'running', 'waiting'))
  with check ((select app.has_developer_role()) and cancel_requested_at is not null
              and (status = 'cancelled' and waiting_for is null and finished_at is not null or status = 'running'));

create policy runs_delete on app.runs for delete to api
  using (organization_id = (select app.org_id()) and (select app.has_developer_role())
         and status in ('completed', 'failed', 'cancelled'));
