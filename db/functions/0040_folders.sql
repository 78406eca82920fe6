-- Folders of a project: create (idempotent by name), list one level, read, delete.
-- Their depth is bounded by folder.maxDepth (db/limits.json).

create or replace function app.folder_json(f app.folders) returns jsonb language sql stable as $$
  select jsonb_build_object('id', f.id, 'name', f.name, 'parentId', f.parent_id, 'createdAt', app.ms(f.created_at))
$$;

-- A folder of the project, or 404 FOLDER_NOT_FOUND (also for ids that cannot be one).
create or replace function app.folder_in_project(project uuid, folder text) returns app.folders language plpgsql stable as $$
declare
  f app.folders;
begin
  select * into f from app.folders
   where organization_id = app.org_id() and project_id = project and id = app.as_uuid(folder);
  if f.id is null then
    perform app.fail('FOLDER_NOT_FOUND', 404, 'Folder not found in this project.');
  end if;
  return f;
end $$;

-- Trimmed and NFC-normalized; never a path: no slash, backslash or control
-- character, not . or .., 1 to 128 characters.
create or replace function app.folder_name(raw text) returns text language plpgsql immutable as $$
declare
  cleaned text := normalize(app.trim_space(coalesce(raw, '')), nfc);
begin
  if cleaned = '' or length(cleaned) > 128 or cleaned in ('.', '..') or cleaned ~ '[/\\[:cntrl:]]' then
    perform app.fail('FOLDER_NAME_INVALID', 400,
      'A folder name is 1 to 128 characters with no slash, backslash or control character, and not . or ..',
      jsonb_build_object('name', raw));
  end if;
  return cleaned;
end $$;

create or replace function api.folder_create(args jsonb) returns jsonb language plpgsql as $$
declare
  p app.projects := app.project_for_write(args->>'id');
  folder_name text := app.folder_name(args->>'name');
  parent app.folders;
  existing app.folders;
  created app.folders;
  max_depth integer;
begin
  if args->>'parentId' is not null then
    parent := app.folder_in_project(p.id, args->>'parentId');
    max_depth := app.limit('folder.maxDepth');
    if parent.depth >= max_depth then
      perform app.fail('FOLDER_DEPTH_EXCEEDED', 400, format('Folders nest at most %s levels deep.', max_depth),
        jsonb_build_object('maxDepth', max_depth));
    end if;
  end if;

  select * into existing from app.folders f
   where f.organization_id = p.organization_id and f.project_id = p.id
     and f.parent_id is not distinct from parent.id and lower(f.name) = lower(folder_name);
  if existing.id is null then
    begin
      insert into app.folders (organization_id, project_id, parent_id, name, depth, created_by)
      values (p.organization_id, p.id, parent.id, folder_name, coalesce(parent.depth, 0) + 1, app.user_id())
      returning * into created;
      perform app.audit('folder.created', 'folder', created.id::text,
                        jsonb_build_object('projectId', p.id, 'name', folder_name));
      return jsonb_build_object('folder', app.folder_json(created), 'created', true);
    exception when unique_violation then
      -- Created concurrently under the same name: answer with the stored folder.
      select * into existing from app.folders f
       where f.organization_id = p.organization_id and f.project_id = p.id
         and f.parent_id is not distinct from parent.id and lower(f.name) = lower(folder_name);
    end;
  end if;
  return jsonb_build_object('folder', app.folder_json(existing), 'created', false);
end $$;

create or replace function api.folders_list(args jsonb) returns jsonb language plpgsql stable as $$
declare
  p app.projects := app.project_for_read(args->>'id');
  parent app.folders;
begin
  if args->>'parentId' is not null then
    parent := app.folder_in_project(p.id, args->>'parentId');
  end if;
  return jsonb_build_object('folders', coalesce((
    select jsonb_agg(app.folder_json(f) order by lower(f.name), f.id)
      from app.folders f
     where f.organization_id = p.organization_id and f.project_id = p.id
       and f.parent_id is not distinct from parent.id), '[]'));
end $$;

create or replace function api.folder_get(args jsonb) returns jsonb language plpgsql stable as $$
declare
  p app.projects := app.project_for_read(args->>'id');
begin
  return jsonb_build_object('folder', app.folder_json(app.folder_in_project(p.id, args->>'folderId')));
end $$;

-- Removes the folder and everything beneath it: subfolders and files by cascade,
-- the files' objects by the documents_purge_objects trigger. With files beneath and
-- no reachable object store the purge could not finish, so nothing is removed
-- (503 PURGE_INCOMPLETE).
create or replace function api.folder_delete(args jsonb) returns jsonb language plpgsql as $$
declare
  p app.projects := app.project_for_write(args->>'id');
  f app.folders := app.folder_in_project(p.id, args->>'folderId');
  files integer;
begin
  with recursive subtree as (
    select f.id
    union all
    select c.id from app.folders c join subtree s on c.parent_id = s.id
     where c.organization_id = f.organization_id
  )
  select count(*) into files
    from app.documents d
   where d.organization_id = f.organization_id and d.folder_id in (select id from subtree) and d.object_key is not null;
  if files > 0 and coalesce(args->'observed'->>'objectStore', 'unconfigured') <> 'reachable' then
    perform app.fail('PURGE_INCOMPLETE', 503,
      'The object store cannot remove the files in this folder right now; nothing was removed. Retry later.',
      jsonb_build_object('files', files));
  end if;
  perform app.audit('folder.deleted', 'folder', f.id::text,
    jsonb_build_object('projectId', p.id, 'name', f.name, 'files', files));
  delete from app.folders where organization_id = f.organization_id and id = f.id;
  return null;
end $$;

grant execute on function app.folder_json, app.folder_in_project, app.folder_name, api.folder_create, api.folders_list,
  api.folder_get, api.folder_delete to api;
