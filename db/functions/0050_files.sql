-- Project files: upload preparation, binding, reading, indexing requests, deletion.
--
-- The object store is the server's to talk to; what it observed arrives in
-- args->'observed' ({objectStore: 'reachable' | 'unreachable' | 'unconfigured',
-- blob: {size, etag} | null}) and the rules below decide with it. Clients cannot
-- send it: every body schema is strict and the server adds it last.

create or replace function app.file_json(d app.documents) returns jsonb language sql stable as $$
  select jsonb_build_object(
    'id', d.id, 'fileName', d.file_name, 'folderId', d.folder_id, 'mimeType', d.mime_type,
    'size', d.size_bytes, 'indexing', jsonb_build_object('status', d.indexing_status),
    'createdAt', app.ms(d.created_at), 'projectId', d.project_id)
$$;

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

-- The caller's organization's upload limit in bytes: 100 MiB unless its policy is stricter.
create or replace function app.upload_limit_bytes() returns bigint language sql stable as $$
  select coalesce((select o.upload_max_bytes from app.organizations o where o.id = app.org_id()), 104857600)
$$;

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
                  where u.organization_id = app.org_id() and u.expires_at < app.now() - interval '24 hours')
$$;
revoke execute on function app.uploads_lapsed() from public;
grant execute on function app.uploads_lapsed() to api;

create or replace function api.upload_prepare(args jsonb) returns jsonb language plpgsql as $$
declare
  p app.projects := app.project_for_write(args->>'id');
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
  values (p.organization_id, upload_id, p.id, app.user_id(), args->>'fileName', args->>'contentType',
          (args->>'size')::bigint, format('%s/%s/%s', p.organization_id, p.id, upload_id),
          app.now() + interval '30 minutes')
  returning * into u;

  -- A preparation also clears the organization's lapsed uploads, a batch at a time,
  -- through one sweep job per organization.
  if app.uploads_lapsed() then
    perform app.enqueue('sweep_expired_uploads', jsonb_build_object('organizationId', p.organization_id),
                        'sweep_expired_uploads:' || p.organization_id);
  end if;
  return jsonb_build_object('uploadId', u.id, 's3Ref', u.object_key, 'expiresAt', app.ms(u.expires_at),
                            'maxBytes', limit_bytes, 'contentType', u.content_type, 'size', u.declared_size);
end $$;

create or replace function api.file_bind(args jsonb) returns jsonb language plpgsql as $$
declare
  p app.projects := app.project_for_write(args->>'id');
  u app.uploads;
  folder app.folders;
  stored_name text := app.file_name(args->>'fileName');
  file_type app.file_types;
  blob jsonb := args->'observed'->'blob';
  limit_bytes bigint;
  opted_in boolean := not coalesce((args->>'skipRagIndexing')::boolean, true);
  d app.documents;
begin
  perform app.object_store_ready(args->'observed');
  select * into u from app.uploads
   where organization_id = p.organization_id and id = app.as_uuid(args->>'uploadId') and project_id = p.id
   for update;
  if u.id is null or u.bound_at is not null or u.expires_at <= app.now() then
    perform app.fail('BLOB_NOT_FOUND', 404,
      case when u.id is null then 'No upload of this project has that uploadId.'
           when u.bound_at is not null then 'This upload is already bound to a file; an uploadId is used once.'
           else 'This upload expired 30 minutes after preparation; prepare a new one.' end,
      jsonb_build_object('uploadId', args->>'uploadId',
        'reason', case when u.id is null then 'unknown' when u.bound_at is not null then 'bound' else 'expired' end));
  end if;
  if args->>'fileId' is distinct from u.object_key then
    perform app.fail('INVALID_BODY', 400, 'fileId must be the s3Ref returned with this upload.',
      jsonb_build_object('issues', jsonb_build_array(jsonb_build_object('path', 'fileId',
        'message', 'is not the s3Ref of this upload'))));
  end if;
  if args->>'folderId' is not null then
    folder := app.folder_in_project(p.id, args->>'folderId');
  end if;
  file_type := app.file_type_for(stored_name);
  if blob is null or jsonb_typeof(blob) <> 'object' then
    -- Nothing is written: the same uploadId binds once the bytes are there.
    perform app.fail('BLOB_NOT_FOUND', 404, 'The upload''s bytes have not arrived; PUT them to the upload url, then bind again.',
      jsonb_build_object('uploadId', u.id, 'reason', 'pending'));
  end if;
  limit_bytes := app.upload_limit_bytes();
  if (blob->>'size')::bigint > limit_bytes then
    perform app.fail('FILE_TOO_LARGE', 400, format('Files are limited to %s bytes.', limit_bytes),
      jsonb_build_object('limitBytes', limit_bytes, 'size', (blob->>'size')::bigint));
  end if;

  insert into app.documents (organization_id, project_id, folder_id, file_name, mime_type, size_bytes,
                             object_key, object_etag, skip_rag_indexing, indexing_status, created_by)
  values (p.organization_id, p.id, folder.id, stored_name, file_type.mime_type, (blob->>'size')::bigint,
          u.object_key, blob->>'etag', not opted_in, case when opted_in then 'indexing' else 'skipped' end, app.user_id())
  returning * into d;
  update app.uploads set bound_at = app.now(), document_id = d.id
   where organization_id = u.organization_id and id = u.id;
  if opted_in then
    perform app.enqueue('index_document', jsonb_build_object('organizationId', d.organization_id, 'documentId', d.id));
  end if;
  perform app.audit('file.bound', 'document', d.id::text,
    jsonb_build_object('projectId', p.id, 'fileName', stored_name, 'size', d.size_bytes));
  return jsonb_build_object('file', app.file_json(d));
end $$;

-- A file of the project, or 404 FILE_NOT_FOUND alike for ids that are missing,
-- trashed, not files or in another project.
create or replace function app.file_in_project(project uuid, document text) returns app.documents
language plpgsql stable as $$
declare
  d app.documents;
begin
  select * into d from app.documents
   where organization_id = app.org_id() and id = app.as_uuid(document)
     and project_id = project and kind = 'file' and trashed_at is null;
  if d.id is null then
    perform app.fail('FILE_NOT_FOUND', 404, 'File not found in this project.');
  end if;
  return d;
end $$;

create or replace function api.files_list(args jsonb) returns jsonb language plpgsql stable as $$
declare
  p app.projects := app.project_for_read(args->>'id');
  scope text := coalesce(args->>'folderId', 'all');
  folder app.folders;
  page_size integer := app.page_size(args->>'limit', 100);
  filters jsonb;
  after_created timestamptz;
  after_id uuid;
  rows jsonb;
  last_position jsonb;
  more boolean;
begin
  if scope not in ('all', 'root') then
    folder := app.folder_in_project(p.id, scope);
    scope := folder.id::text;
  end if;
  filters := jsonb_build_object('projectId', p.id, 'folderId', scope);
  select r.after_created, r.after_id into after_created, after_id
    from app.keyset_resume(args->>'cursor', 'files', filters) r;

  -- One row more than the page tells whether another page follows.
  select coalesce(jsonb_agg(app.file_json(page.d) order by page.n) filter (where page.n <= page_size), '[]'),
         count(*) > page_size,
         (array_agg(app.keyset_position((page.d).created_at, (page.d).id)) filter (where page.n = page_size))[1]
    into rows, more, last_position
  from (
    select d, row_number() over (order by d.created_at desc, d.id desc) as n
      from app.documents d
     where d.organization_id = p.organization_id and d.project_id = p.id
       and d.kind = 'file' and d.trashed_at is null
       and (d.created_at, d.id) < (after_created, after_id)
       and case scope when 'all' then true
                      when 'root' then d.folder_id is null
                      else d.folder_id = folder.id end
     order by d.created_at desc, d.id desc
     limit page_size + 1
  ) page;

  return app.keyset_page('files', rows, more, 'files', filters, last_position);
end $$;

create or replace function api.file_get(args jsonb) returns jsonb language plpgsql stable as $$
declare
  p app.projects := app.project_for_read(args->>'id');
begin
  return jsonb_build_object('file', app.file_json(app.file_in_project(p.id, args->>'documentId')));
end $$;

-- The file and where its bytes are: the server streams them from the object store.
create or replace function api.file_content(args jsonb) returns jsonb language plpgsql stable as $$
declare
  p app.projects := app.project_for_read(args->>'id');
  d app.documents := app.file_in_project(p.id, args->>'documentId');
begin
  return jsonb_build_object('file', app.file_json(d),
    'object', jsonb_build_object('key', d.object_key, 'etag', d.object_etag));
end $$;

create or replace function api.file_retry_indexing(args jsonb) returns jsonb language plpgsql as $$
declare
  p app.projects := app.project_for_write(args->>'id');
  d app.documents := app.file_in_project(p.id, args->>'documentId');
  wait integer;
begin
  wait := app.take_tokens(jsonb_build_array(jsonb_build_object(
    'key', 'user:' || app.user_id() || ':retry-indexing', 'perMinute', 10, 'burst', 10)));
  if wait > 0 then
    perform app.fail('RATE_LIMITED', 429, 'Too many indexing retries; retry after the indicated seconds.',
      jsonb_build_object('retryAfter', wait));
  end if;
  -- Asking for indexing lifts the opt-out made at binding.
  update app.documents
     set skip_rag_indexing = false, indexing_status = 'indexing', indexing_error = null, updated_at = app.now()
   where organization_id = d.organization_id and id = d.id;
  -- One indexing job per document: repeated retries replace the queued one.
  perform app.enqueue('index_document', jsonb_build_object('organizationId', d.organization_id, 'documentId', d.id),
                      'index_document:' || d.id);
  return jsonb_build_object('status', 'indexing');
end $$;

-- Removes objects in the background, in batches a job can carry; the job retries
-- until the store has removed them all.
create or replace function app.purge_objects(keys text[]) returns void language plpgsql as $$
declare
  batch_start integer := 1;
begin
  while batch_start <= coalesce(cardinality(keys), 0) loop
    perform app.enqueue('delete_objects', jsonb_build_object('keys', to_jsonb(keys[batch_start:batch_start + 999])));
    batch_start := batch_start + 1000;
  end loop;
end $$;

-- Whatever removes a file's row (its delete, a folder's cascade, retention) removes
-- its object too, in the same transaction's job; likewise the blob of an upload
-- removed before it was bound. No path can forget the store.
create or replace function app.purge_deleted_document_objects() returns trigger language plpgsql as $$
begin
  perform app.purge_objects(array(select o.object_key from gone o where o.object_key is not null));
  return null;
end $$;
drop trigger if exists documents_purge_objects on app.documents;
create trigger documents_purge_objects after delete on app.documents
  referencing old table as gone for each statement execute function app.purge_deleted_document_objects();

create or replace function app.purge_deleted_upload_objects() returns trigger language plpgsql as $$
begin
  perform app.purge_objects(array(select o.object_key from gone o where o.bound_at is null));
  return null;
end $$;
drop trigger if exists uploads_purge_objects on app.uploads;
create trigger uploads_purge_objects after delete on app.uploads
  referencing old table as gone for each statement execute function app.purge_deleted_upload_objects();

create or replace function api.file_delete(args jsonb) returns jsonb language plpgsql as $$
declare
  p app.projects := app.project_for_write(args->>'id');
  d app.documents := app.file_in_project(p.id, args->>'documentId');
begin
  -- The object goes by the documents_purge_objects trigger.
  delete from app.documents where organization_id = d.organization_id and id = d.id;
  perform app.audit('file.deleted', 'document', d.id::text, jsonb_build_object('projectId', p.id, 'fileName', d.file_name));
  return null;
end $$;

-- Maintenance for the worker (owner connection). Lapsed uploads, a batch at a time:
-- removing the rows purges the blobs never bound (uploads_purge_objects); a bound
-- upload's object is its file's and stays.
create or replace function app.worker_forget_lapsed_uploads(organization uuid, batch integer) returns integer
language sql as $$
  with lapsed as (
    select u.organization_id, u.id from app.uploads u
     where (organization is null or u.organization_id = organization)
       and u.expires_at < app.now() - interval '24 hours'
     order by u.expires_at
     limit batch
     for update skip locked
  ), gone as (
    delete from app.uploads u using lapsed l where u.organization_id = l.organization_id and u.id = l.id returning 1
  )
  select count(*)::integer from gone
$$;

-- How long the files of a deleted project stay in retention before they go for good.
create or replace function app.document_retention() returns interval language sql immutable as $$
  select interval '30 days'
$$;

-- Trashed documents past retention, a batch at a time (their objects by trigger).
create or replace function app.worker_purge_retained_documents(batch integer) returns integer language sql as $$
  with expired as (
    select d.organization_id, d.id from app.documents d
     where d.trashed_at < app.now() - app.document_retention()
     order by d.trashed_at
     limit batch
     for update skip locked
  ), gone as (
    delete from app.documents d using expired e where d.organization_id = e.organization_id and d.id = e.id returning 1
  )
  select count(*)::integer from gone
$$;

-- What indexing needs of a document still waiting for it.
create or replace function app.worker_document_to_index(organization uuid, document uuid)
returns table (object_key text, object_etag text, mime_type text, plain_text boolean) language sql stable as $$
  select d.object_key, d.object_etag, d.mime_type, coalesce(t.plain_text, false)
    from app.documents d
    left join app.file_types t on t.extension = app.file_extension(d.file_name)
   where d.organization_id = organization and d.id = document and d.indexing_status = 'indexing'
$$;

create or replace function app.worker_document_indexed(organization uuid, document uuid, extracted text, failure text)
returns void language sql as $$
  update app.documents
     set indexing_status = case when failure is null then 'indexed' else 'failed' end,
         extracted_text = extracted, indexing_error = failure, updated_at = app.now()
   where organization_id = organization and id = document and indexing_status = 'indexing'
$$;

-- Maintenance is the worker's, never the request role's.
drop function if exists app.worker_lapsed_uploads(uuid, integer);
drop function if exists app.worker_forget_uploads(uuid, uuid[]);
drop function if exists app.worker_organizations_with_lapsed_uploads();
revoke execute on function app.worker_forget_lapsed_uploads(uuid, integer) from public;
revoke execute on function app.worker_purge_retained_documents(integer) from public;
revoke execute on function app.worker_document_to_index(uuid, uuid) from public;
revoke execute on function app.worker_document_indexed(uuid, uuid, text, text) from public;

-- Operators narrow an organization's uploads; null restores the service default.
create or replace function app.operator_upload_policy_set(organization uuid, max_bytes bigint, extensions text[])
returns void language plpgsql as $$
declare
  unknown text[];
begin
  extensions := (select array_agg(distinct lower(e) order by lower(e)) from unnest(extensions) e);
  unknown := array(select e from unnest(extensions) e where not exists (select 1 from app.file_types t where t.extension = e));
  if cardinality(unknown) > 0 then
    raise exception 'unsupported file types: %', array_to_string(unknown, ', ');
  end if;
  update app.organizations set upload_max_bytes = max_bytes, upload_extensions = extensions where id = organization;
end $$;
revoke execute on function app.operator_upload_policy_set(uuid, bigint, text[]) from public;
