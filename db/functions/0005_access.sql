-- Access helpers the policies share, so a table's policy file reads as its rule
-- (app.can_read_project(project_id)) rather than a sub-select. They run as the
-- caller, under the policies of the tables they read; a helper is never used by the
-- policy of a table it reads, so policies do not recurse.

-- Teams of the caller in the selected organization.
create or replace function app.my_team_ids() returns setof uuid language sql stable as $$
  select tm.team_id from app.team_members tm
   where tm.organization_id = app.org_id() and tm.user_id = app.user_id()
$$;

-- 'edit', 'read' or null: what the caller may do with a project.
-- Owners and admins edit every project; others hold what grants give them.
create or replace function app.project_access(project uuid) returns text language plpgsql stable as $$
begin
  return case
    when app.is_admin() then 'edit'
    else (select case when bool_or(pa.level = 'edit') then 'edit' when count(*) > 0 then 'read' end
            from app.project_access pa
           where pa.organization_id = app.org_id() and pa.project_id = project
             and (pa.user_id = app.user_id() or pa.team_id in (select t from app.my_team_ids() t)))
  end;
end $$;

-- Whether the caller sees the project: exactly when its row is visible to them
-- (db/policies/projects.sql decides), so project-scoped tables follow their project
-- without restating the rule. Owners and admins see every project of the
-- organization, which plain SQL answers without a lookup (this wrapper is inlined
-- into the policies that call it); anyone else costs one primary-key probe.
create or replace function app.can_read_project(project uuid) returns boolean language sql stable as $$
  select app.is_admin() or app.project_visible(project)
$$;

create or replace function app.project_visible(project uuid) returns boolean language plpgsql stable as $$
begin
  return exists (select 1 from app.projects p where p.organization_id = app.org_id() and p.id = project);
end $$;

-- Whether the caller may change the project's contents: the Editor role or above and
-- edit access to it.
create or replace function app.can_edit_project(project uuid) returns boolean language sql stable as $$
  select app.has_editing_role() and app.project_access(project) = 'edit'
$$;

-- Whether the caller sees the run (db/policies/runs.sql decides): approvals and
-- questions follow their run.
create or replace function app.can_read_run(run uuid) returns boolean language plpgsql stable as $$
begin
  return exists (select 1 from app.runs r where r.organization_id = app.org_id() and r.id = run);
end $$;

-- Whether the caller created the project. A function rather than a subquery in the
-- project_access policy: the projects policy reads project_access, and PostgreSQL
-- refuses policies that reach back to the relation they guard.
create or replace function app.created_by_caller(project uuid) returns boolean language plpgsql stable as $$
begin
  return exists (select 1 from app.projects p
                  where p.organization_id = app.org_id() and p.id = project and p.created_by = app.user_id());
end $$;

grant execute on function app.my_team_ids, app.project_access, app.can_read_project, app.project_visible,
  app.can_edit_project, app.can_read_run, app.created_by_caller to api;
