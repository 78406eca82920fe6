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

-- Which projects the caller sees (the rule of db/policies/projects.sql): owners and
-- admins every project of the organization; anyone else the projects a grant gives
-- them (their own or a team's) and those they created. The policies of
-- project-scoped tables write it as
--   (select app.is_admin()) or project_id in (select app.granted_project_ids())
-- so the grants are read once per statement into a hashed set, not once per row
-- (a run list scans thousands of rows), and never for admins;
-- app.can_read_project(id) says the same of one project.
create or replace function app.granted_project_ids() returns setof uuid language plpgsql stable as $$
begin
  return query
    select pa.project_id from app.project_access pa
     where pa.organization_id = app.org_id()
       and (pa.user_id = app.user_id() or pa.team_id in (select t from app.my_team_ids() t))
    union
    select p.id from app.projects p where p.organization_id = app.org_id() and p.created_by = app.user_id();
end $$;

create or replace function app.can_read_project(project uuid) returns boolean language plpgsql stable as $$
begin
  return app.is_admin() or exists (select 1 from app.granted_project_ids() g where g = project);
end $$;

drop function if exists app.project_visible(uuid);

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

-- The competences the caller holds in the organization: grants neither revoked nor
-- expired.
create or replace function app.live_competences() returns text[] language plpgsql stable as $$
begin
  return array(
    select g.competence from app.competence_grants g
     where g.organization_id = app.org_id() and g.user_id = app.user_id()
       and g.revoked_at is null and (g.expires_at is null or g.expires_at > app.now()));
end $$;

-- The notificationExport capability: Owner, Admin or a live notifications.export
-- grant. Its holders read every notification of the organization
-- (db/policies/notifications.sql), the export's rows.
create or replace function app.can_export_notifications() returns boolean language plpgsql stable as $$
begin
  return app.is_admin() or 'notifications.export' = any (app.live_competences());
end $$;

-- What another member may do with a project ('edit', 'read' or null), by the same rule
-- as app.project_access for the caller: owners and admins edit every project, the
-- creator edits theirs, anyone else holds what their own or their teams' grants give;
-- a member who is disabled, or of another organization, nothing. It reads grants the
-- caller's policies hide, so it is not granted to the request role: only the owner's
-- connection (the worker) and SECURITY DEFINER rules (app.task_notify) call it.
create or replace function app.member_project_access(organization uuid, member uuid, project uuid) returns text
language plpgsql stable as $$
declare
  member_role text := (select m.role from app.memberships m
                        where m.organization_id = organization and m.user_id = member and not m.disabled);
begin
  if member_role is null then
    return null;
  elsif member_role in ('owner', 'admin')
     or exists (select 1 from app.projects p where p.organization_id = organization and p.id = project and p.created_by = member) then
    return 'edit';
  end if;
  return (select case when bool_or(pa.level = 'edit') then 'edit' when count(*) > 0 then 'read' end
            from app.project_access pa
           where pa.organization_id = organization and pa.project_id = project
             and (pa.user_id = member
                  or pa.team_id in (select tm.team_id from app.team_members tm
                                     where tm.organization_id = organization and tm.user_id = member)));
end $$;

-- Whether another member may write to a project: an editing role and edit access.
create or replace function app.member_can_edit_project(organization uuid, member uuid, project uuid) returns boolean
language sql stable as $$
  select app.member_project_access(organization, member, project) is not distinct from 'edit'
     and exists (select 1 from app.memberships m where m.organization_id = organization and m.user_id = member
                    and app.role_rank(m.role) >= app.role_rank('editor'))
$$;

grant execute on function app.my_team_ids, app.project_access, app.granted_project_ids, app.can_read_project,
  app.can_edit_project, app.can_read_run, app.created_by_caller, app.live_competences, app.can_export_notifications to api;

-- Whether the caller may read what was indexed from a document, a knowledge entry or
-- a website's page: exactly when they may read that row (its own policies decide,
-- trashed files excluded). The policies of index_files and index_chunks use it.
create or replace function app.can_read_indexed(organization uuid, document uuid, entry uuid, page uuid) returns boolean
language sql stable as $$
  select organization = app.org_id() and (
    (document is not null and exists (select 1 from app.documents d
                                       where d.organization_id = organization and d.id = document and d.trashed_at is null))
    or (entry is not null and exists (select 1 from app.knowledge_entries k
                                       where k.organization_id = organization and k.id = entry))
    or (page is not null and exists (select 1 from app.website_pages p
                                      where p.organization_id = organization and p.id = page)))
$$;
-- The form the policies of the previous release call, kept until none does.
create or replace function app.can_read_indexed(organization uuid, document uuid, entry uuid) returns boolean
language sql stable as $$
  select app.can_read_indexed(organization, document, entry, null)
$$;
grant execute on function app.can_read_indexed(uuid, uuid, uuid, uuid), app.can_read_indexed(uuid, uuid, uuid) to api;
