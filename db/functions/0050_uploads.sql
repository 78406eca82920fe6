-- Uploads: preparing the presigned PUT a file's bytes arrive by, and the rules of
-- names, types and sizes every file is held to. An upload lives upload.lifetimeSeconds
-- and may not exceed upload.maxBytes (db/limits.json).
--
-- The object store is the server's to talk to; what it observed arrives in
-- args->'observed' ({objectStore: 'reachable' | 'unreachable' | 'unconfigured',
-- blob: {size, etag} | null}) and the rules below decide with it. Clients cannot
-- send it: every body schema is strict and the server adds it last.

create or replace function app.object_store_ready(observed jsonb) returns void language plpgsql immutable as $$
begin
  case coalesce(observed->>'objectStore', 'unconfigured')
    when 'reachable' then
      return;
    when 'unconfigured' then
      perform app.fail('OBJECT_STORE_UNCONFIGURED', 503,
        'This deployment has no object storage configured, so files cannot be uploaded.');
    else
      perform app.fail('OBJECT_STORE_UNAVAILABLE', 503,
        'The object store cannot be reached; nothing was changed. Retry later.');
  end case;
end $$;

-- A file name as stored: trimmed, NFC-normalized, 1 to 255 characters, a name and
-- never a path.
create or replace function app.file_name(raw text) returns text language plpgsql immutable as $$
declare
  cleaned text := normalize(app.trim_space(coalesce(raw, '')), nfc);
begin
  if cleaned = '' or length(cleaned) > 255 or cleaned ~ '[/\\[:cntrl:]]' then
    perform app.fail('INVALID_BODY', 400, 'fileName must be 1 to 255 characters with no slash, backslash or control character.',
      jsonb_build_object('issues', jsonb_build_array(jsonb_build_object('path', 'fileName',
        'message', 'must be a file name of 1 to 255 characters, not a path'))));
  end if;
  return cleaned;
end $$;

-- The caller's organization's upload limit in bytes: upload.maxBytes unless its
-- policy is stricter.
create or replace function app.upload_limit_bytes() returns bigint language plpgsql stable as $$
begin
  return coalesce((select o.upload_max_bytes from app.organizations o where o.id = app.org_id()), app.limit('upload.maxBytes'));
end $$;

-- A file name's extension, lower-cased; null when it has none.
create or replace function app.file_extension(file_name text) returns text language sql immutable as $$
  select lower(substring(file_name from '\.([^./\\]+)$'))
$$;

-- The type of a file name's extension, when the service supports it and the
-- organization's policy admits it.
create or replace function app.file_type_for(file_name text) returns app.file_types language plpgsql stable as $$
declare
  ext text := app.file_extension(file_name);
  found app.file_types;
  admitted text[];
begin
  select * into found from app.file_types t where t.extension = ext;
  if found.extension is null then
    perform app.fail('UNSUPPORTED_FILE_TYPE', 400,
      case when ext is null then 'The file name has no extension, so its type is unknown.'
           else format('Files of type .%s are not supported.', ext) end,
      jsonb_build_object('extension', ext,
        'supported', (select jsonb_agg(t.extension order by t.extension) from app.file_types t)));
  end if;
  select o.upload_extensions into admitted from app.organizations o where o.id = app.org_id();
  if admitted is not null and not found.extension = any (admitted) then
    perform app.fail('UPLOAD_POLICY_REJECTED', 400,
      format('The organization''s upload policy does not admit .%s files.', found.extension),
      jsonb_build_object('extension', found.extension, 'allowed', to_jsonb(admitted)));
  end if;
  return found;
end $$;

-- SECURITY DEFINER: lapsed uploads are organization-wide housekeeping, beyond the
-- rows the caller may see; this answers only whether any of the caller's
-- organization are due.
drop function if exists app.uploads_lapsed(uuid);
create or replace function app.uploads_lapsed() returns boolean
language sql stable security definer set search_path = pg_catalog, app as $$
  select exists (select 1 from app.uploads u
                  where u.organization_id = app.org_id() and u.expires_at < app.now() - app.limit('upload.lapsedKeepSeconds') * interval '1 second')
$$;

-- An upload prepared by the caller: into a project (object key
-- organization/project/upload) or, with project null, for the organization's hub
-- documents (organization/documents/upload). The caller's right to upload there is
-- checked before; the names, types and sizes every file is held to are checked here.
create or replace function app.upload_open(organization uuid, project uuid, args jsonb) returns jsonb language plpgsql as $$
declare
  limit_bytes bigint := app.upload_limit_bytes();
  upload_id uuid := gen_random_uuid();
  u app.uploads;
begin
  if args->>'fileName' is not null then
    perform app.file_type_for(app.file_name(args->>'fileName'));
  end if;
  if (args->>'size')::numeric > limit_bytes then
    perform app.fail('FILE_TOO_LARGE', 400, format('Files are limited to %s bytes.', limit_bytes),
      jsonb_build_object('limitBytes', limit_bytes, 'size', (args->>'size')::numeric));
  end if;
  perform app.object_store_ready(args->'observed');

  insert into app.uploads (organization_id, id, project_id, created_by, file_name, content_type, declared_size,
                           object_key, expires_at)
  values (organization, upload_id, project, app.user_id(), args->>'fileName', args->>'contentType',
          (args->>'size')::bigint, format('%s/%s/%s', organization, coalesce(project::text, 'documents'), upload_id),
          app.now() + app.limit('upload.lifetimeSeconds') * interval '1 second')
  returning * into u;

  -- A preparation also clears the organization's lapsed uploads, a batch at a time,
  -- through one sweep job per organization.
  if app.uploads_lapsed() then
    perform app.enqueue('sweep_expired_uploads', jsonb_build_object('organizationId', organization),
                        'sweep_expired_uploads:' || organization);
  end if;
  return jsonb_build_object('uploadId', u.id, 's3Ref', u.object_key, 'expiresAt', app.ms(u.expires_at),
                            'maxBytes', limit_bytes, 'contentType', u.content_type, 'size', u.declared_size);
end $$;

create or replace function api.upload_prepare(args jsonb) returns jsonb language plpgsql as $$
declare
  p app.projects := app.project_for_write(args->>'id');
begin
  return app.upload_open(p.organization_id, p.id, args);
end $$;

grant execute on function app.object_store_ready, app.file_name, app.upload_limit_bytes, app.file_extension,
  app.file_type_for, app.uploads_lapsed, app.upload_open, api.upload_prepare to api;
