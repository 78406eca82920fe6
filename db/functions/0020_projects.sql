-- Projects: list, lookup, create, update (archive, restore, rename), delete.

create or replace function app.project_json(p app.projects) returns jsonb language sql stable as $$
  select jsonb_build_object(
    'id', p.id, 'name', p.name, 'key', p.key, 'description', p.description,
    'externalItemId', p.external_item_id,
    'createdAt', app.ms(p.created_at), 'updatedAt', app.ms(p.updated_at))
  || case when p.archived_at is null then '{}'::jsonb
          else jsonb_build_object('archivedAt', app.ms(p.archived_at)) end
$$;

-- A validation refusal in the same shape the server's shape checks produce.
create or replace function app.invalid_body(path text, message text) returns void language sql as $$
  select app.fail('INVALID_BODY', 400, message,
    jsonb_build_object('issues', jsonb_build_array(jsonb_build_object('path', path, 'message', message))))
$$;

-- The project as the caller sees it, locked for change; 404 when invisible or absent.
-- Locking applies the update policy as well as the select policy, so a project the
-- caller may read but not change is not locked: it is read without a lock, and the
-- caller's permission checks refuse it (403) before anything is written.
create or replace function app.project_for_change(project uuid) returns app.projects language plpgsql as $$
declare
  p app.projects;
begin
  select * into p from app.projects where organization_id = app.org_id() and id = project for update;
  if p.id is null then
    select * into p from app.projects where organization_id = app.org_id() and id = project;
  end if;
  if p.id is null then
    perform app.fail('NOT_FOUND', 404, 'Project not found.');
  end if;
  return p;
end $$;

-- The key derived from a name: the initials of a name of several words, else the
-- word itself; ASCII letters and digits only (accents folded), uppercase, 2-6
-- characters starting with a letter. Null when nothing valid derives.
create or replace function app.project_key_from_name(name text) returns text language plpgsql immutable as $$
declare
  words text[] := array(
    select w from regexp_split_to_table(
      upper(regexp_replace(normalize(name, nfkd), '[^\x01-\x7F]', '', 'g')), '[^A-Z0-9]+') w
    where w <> '');
  derived text;
begin
  if cardinality(words) >= 2 then
    derived := array_to_string(array(select left(w, 1) from unnest(words) w), '');
  else
    derived := coalesce(words[1], '');
  end if;
  derived := left(regexp_replace(derived, '^[0-9]+', ''), 6);
  return case when derived ~ '^[A-Z][A-Z0-9]{1,5}$' then derived end;
end $$;

-- Derived keys tried in order when the base is taken: ALPHA, ALPHA2 ... ALPH10 ...
create or replace function app.project_key_candidates(base text) returns setof text language sql immutable as $$
  select case when n = 1 then base else left(base, 6 - length(n::text)) || n end
    from generate_series(1, 999) n
$$;

create or replace function api.projects_list(args jsonb) returns jsonb language plpgsql stable as $$
declare
  lookup text := app.clean_identifier(args->>'externalItemId');
  archived text := coalesce(args->>'archived', 'exclude');
  page_size integer := app.page_size(args->>'limit', 'page.projects.maxSize');
  filters jsonb := jsonb_build_object('archived', archived);
  page_start record;
  rows jsonb;
  last_position jsonb;
  more boolean;
begin
  if args ? 'externalItemId' then
    if args ?| array['limit', 'cursor', 'archived'] then
      perform app.fail('INVALID_QUERY', 400, 'externalItemId looks up one project; it takes no other parameter.',
        jsonb_build_object('issues', jsonb_build_array(jsonb_build_object('path', 'externalItemId',
          'message', 'not combinable with limit, cursor or archived'))));
    end if;
    return jsonb_build_object(
      'projects', coalesce((select jsonb_agg(app.project_json(p)) from app.projects p
                             where p.organization_id = app.org_id() and p.external_item_id = lookup), '[]'),
      'isDone', true, 'continueCursor', '');
  end if;

  page_start := app.keyset_resume(args->>'cursor', 'projects', filters);
  -- The hottest list: the page, whether another follows and where it resumes, in one
  -- pass over page_size + 1 rows (the generic app.keyset_page would build the extra
  -- row's body and trim it).
  select jsonb_agg(app.project_json(page.p) order by page.n) filter (where page.n <= page_size),
         (array_agg(app.keyset_position((page.p).created_at, (page.p).id)) filter (where page.n = page_size))[1],
         count(*) > page_size
    into rows, last_position, more
    from (select p, row_number() over (order by p.created_at desc, p.id desc) as n
            from app.projects p
           where p.organization_id = app.org_id()
             and (p.created_at, p.id) < (page_start.after_created, page_start.after_id)
             and case archived when 'only' then p.archived_at is not null
                               when 'include' then true
                               else p.archived_at is null end
           order by p.created_at desc, p.id desc
           limit page_size + 1) page;
  return app.keyset_reply('projects', 'projects', filters, rows, case when more then last_position end);
end $$;

-- PROJECT_DUPLICATE_EXTERNAL_ID names the key of the project holding the id. That
-- project may be invisible to the caller (the id is unique per organization, not per
-- caller), so this one lookup reads past the caller's policies; it returns only the key.
drop function if exists app.project_key_holding_external_id(uuid, text);
create or replace function app.project_key_holding_external_id(external_id text) returns text
language sql stable security definer set search_path = pg_catalog, app as $$
  select key from app.projects where organization_id = app.org_id() and external_item_id = external_id
$$;

create or replace function app.fail_duplicate_external_id(external_id text) returns void language sql as $$
  select app.fail('PROJECT_DUPLICATE_EXTERNAL_ID', 409, 'Another project already uses this externalItemId.',
    jsonb_build_object('externalItemId', external_id,
                       'key', app.project_key_holding_external_id(external_id)))
$$;

create or replace function api.project_create(args jsonb) returns jsonb language plpgsql as $$
declare
  project_id uuid := gen_random_uuid();
  project_name text := app.trim_space(args->>'name');
  explicit_key text := upper(nullif(btrim(args->>'key'), ''));
  external_id text := app.clean_identifier(args->>'externalItemId');
  candidate text;
  inserted boolean := false;
  violated text;
  at timestamptz := app.now();
  created jsonb;
begin
  if not app.has_editing_role() then
    perform app.fail('ROLE_FORBIDDEN', 403, 'Creating projects needs the Editor role or above.');
  end if;
  if project_name is null or project_name = '' then
    perform app.invalid_body('name', 'name must not be blank');
  end if;
  if explicit_key is not null and explicit_key !~ '^[A-Z][A-Z0-9]{1,5}$' then
    perform app.invalid_body('key', 'key must be 2-6 letters or digits starting with a letter');
  end if;
  if args ? 'externalItemId' and args->>'externalItemId' is not null and external_id is null then
    perform app.invalid_body('externalItemId', 'externalItemId must not be blank');
  end if;

  -- The explicit key alone, or the derived key, its numbered variants and finally no
  -- key. A derived candidate someone else holds (or takes concurrently) moves on to
  -- the next; a taken explicit key is refused. Not ON CONFLICT: its arbiter checks the
  -- new row against the select policy, which a creator's project passes only once
  -- its creator's grant exists.
  for candidate in
    select k from (
      select explicit_key as k, 0::bigint as n where explicit_key is not null
      union all
      select c.k, c.n from app.project_key_candidates(app.project_key_from_name(project_name)) with ordinality as c(k, n)
       where explicit_key is null and c.k is not null
      union all
      select null, 1000000 where explicit_key is null
    ) ordered order by n
  loop
    begin
      insert into app.projects (organization_id, id, name, key, description, external_item_id,
                                created_by, created_at, updated_at)
      values (app.org_id(), project_id, project_name, candidate, args->>'description', external_id,
              app.user_id(), at, at);
      inserted := true;
    exception when unique_violation then
      get stacked diagnostics violated = constraint_name;
      if violated = 'projects_external_item_id_key' then
        perform app.fail_duplicate_external_id(external_id);
      elsif violated <> 'projects_key_key' then
        raise;
      elsif explicit_key is not null then
        perform app.fail('PROJECT_KEY_TAKEN', 409, 'Another project already uses this key.',
          jsonb_build_object('key', explicit_key));
      end if;
    end;
    exit when inserted;
  end loop;

  -- The creator edits what they create, whatever their grants elsewhere.
  insert into app.project_access (organization_id, project_id, user_id, level)
  values (app.org_id(), project_id, app.user_id(), 'edit');

  perform app.audit('project.created', 'project', project_id::text,
                    jsonb_build_object('name', project_name));

  created := (select app.project_json(p) from app.projects p where p.organization_id = app.org_id() and p.id = project_id);
  -- Event triggers on project.created start from the outbox (db/functions/0083_events.sql).
  perform app.raise_event(app.org_id(), 'project.created',
    jsonb_build_object('project', created, 'createdBy', app.user_id()), project_id);
  return jsonb_build_object('project', created);
end $$;

-- PATCH: a restore applies first and an archive last, so one request can restore
-- and rename, or rename and archive; anything else on an archived project is refused.
create or replace function api.project_update(args jsonb) returns jsonb language plpgsql as $$
declare
  p app.projects := app.project_for_change((args->>'id')::uuid);
  archiving boolean := args ? 'archived' and (args->>'archived')::boolean;
  restoring boolean := args ? 'archived' and not (args->>'archived')::boolean;
  edits boolean := args ?| array['name', 'description', 'externalItemId'];
  new_name text := app.trim_space(args->>'name');
  external_id text := app.clean_identifier(args->>'externalItemId');
  at timestamptz := app.now();
begin
  if not (args ?| array['archived', 'name', 'description', 'externalItemId']) then
    perform app.fail('INVALID_BODY', 400, 'Send at least one of archived, name, description, externalItemId.',
      jsonb_build_object('issues', jsonb_build_array(jsonb_build_object('path', '', 'message', 'empty update'))));
  end if;
  if args ? 'archived' and not app.is_admin() then
    perform app.fail('ROLE_FORBIDDEN', 403, 'Archiving and restoring projects needs the Owner or Admin role.');
  end if;
  if edits and not app.can_edit_project(p.id) then
    perform app.fail('ROLE_FORBIDDEN', 403, 'Changing this project needs the Editor role and edit access.');
  end if;
  if args ? 'name' and (new_name is null or new_name = '') then
    perform app.invalid_body('name', 'name must not be blank');
  end if;
  if args ? 'externalItemId' and args->>'externalItemId' is not null and external_id is null then
    perform app.invalid_body('externalItemId', 'externalItemId must not be blank; send null to release it');
  end if;

  if restoring and p.archived_at is not null then
    p.archived_at := null;
    perform app.audit('project.restored', 'project', p.id::text);
  end if;

  if edits then
    if p.archived_at is not null then
      perform app.fail('PROJECT_ARCHIVED', 403, 'The project is archived; restore it before changing it.');
    end if;
    if args ? 'name' then p.name := new_name; end if;
    if args ? 'description' then p.description := args->>'description'; end if;
    if args ? 'externalItemId' then p.external_item_id := external_id; end if;
    perform app.audit('project.updated', 'project', p.id::text,
      (select jsonb_object_agg(k, args->k) from jsonb_object_keys(args) k
        where k in ('name', 'description', 'externalItemId')));
  end if;

  if archiving and p.archived_at is null then
    p.archived_at := at;
    perform app.audit('project.archived', 'project', p.id::text);
  end if;

  begin
    update app.projects
       set name = p.name, description = p.description, external_item_id = p.external_item_id,
           archived_at = p.archived_at, updated_at = at
     where organization_id = p.organization_id and id = p.id;
  exception when unique_violation then
    perform app.fail_duplicate_external_id(external_id);
  end;

  return jsonb_build_object('project', (
    select app.project_json(x) from app.projects x where x.organization_id = p.organization_id and x.id = p.id));
end $$;

-- What stands in the way of deleting a project, as refusals in the order they are
-- reported. Capabilities that own records a delete must not destroy (automation
-- installs, protected documents) add their checks here.
create or replace function app.project_delete_refusal(p app.projects) returns jsonb language sql stable as $$
  select case
    when p.legal_hold_at is not null then jsonb_build_object('code', 'PROJECT_LEGAL_HOLD',
      'message', 'The project is under legal hold and cannot be deleted.')
    when exists (select 1 from app.automation_installs i where i.organization_id = p.organization_id and i.project_id = p.id)
      then jsonb_build_object('code', 'PROJECT_HAS_BOUND_AUTOMATIONS',
        'message', 'Automations are installed in the project; remove them first.',
        'data', jsonb_build_object('automations', (
          select jsonb_agg(a.name order by lower(a.name)) from app.automation_installs i
            join app.automations a on a.organization_id = i.organization_id and a.id = i.automation_id
           where i.organization_id = p.organization_id and i.project_id = p.id)))
  end
$$;

create or replace function api.project_delete(args jsonb) returns jsonb language plpgsql as $$
declare
  p app.projects := app.project_for_change((args->>'id')::uuid);
  mode text := coalesce(args->>'mode', 'cascade');
  refusal jsonb;
begin
  if not app.can_edit_project(p.id) then
    perform app.fail('ROLE_FORBIDDEN', 403, 'Deleting this project needs the Editor role and edit access.');
  end if;
  refusal := app.project_delete_refusal(p);
  if refusal is not null then
    perform app.fail(refusal->>'code', 409, refusal->>'message', coalesce(refusal->'data', '{}'));
  end if;
  if mode = 'cascade' then
    perform app.spend_user_budget('projectCascadeDelete', 'Too many project deletions; retry after the indicated seconds.');
  end if;

  perform app.audit('project.deleted', 'project', p.id::text,
    jsonb_build_object('mode', mode, 'name', p.name, 'key', p.key));
  -- Files outlive the project: detached, released into the organization; cascaded,
  -- into retention (trashed, purged with their objects after document.retentionSeconds).
  update app.documents
     set project_id = null, folder_id = null, updated_at = app.now(),
         trashed_at = case when mode = 'cascade' then app.now() end
   where organization_id = p.organization_id and project_id = p.id;
  -- Rows of uploads never bound go by cascade, their blobs by uploads_purge_objects.
  delete from app.projects where organization_id = p.organization_id and id = p.id;
  return null;
end $$;

-- Guards of project-scoped operations (folders, files, ...): the project as the
-- caller sees it, 404 when invisible; for writes also the Editor role with edit
-- access (403 ROLE_FORBIDDEN) and an active project (403 PROJECT_ARCHIVED).
create or replace function app.project_for_read(project text) returns app.projects language plpgsql stable as $$
declare
  p app.projects;
begin
  select * into p from app.projects where organization_id = app.org_id() and id = app.as_uuid(project);
  if p.id is null then
    perform app.fail('NOT_FOUND', 404, 'Project not found.');
  end if;
  return p;
end $$;

create or replace function app.project_for_write(project text) returns app.projects language plpgsql stable as $$
declare
  p app.projects := app.project_for_read(project);
begin
  if not app.can_edit_project(p.id) then
    perform app.fail('ROLE_FORBIDDEN', 403, 'Changing this project needs the Editor role and edit access.');
  end if;
  if p.archived_at is not null then
    perform app.fail('PROJECT_ARCHIVED', 403, 'The project is archived; restore it before changing it.');
  end if;
  return p;
end $$;

grant execute on function app.project_json, app.invalid_body, app.project_for_change, app.project_key_from_name,
  app.project_key_candidates, api.projects_list, app.project_key_holding_external_id, app.fail_duplicate_external_id,
  api.project_create, api.project_update, app.project_delete_refusal, api.project_delete, app.project_for_read,
  app.project_for_write to api;
