-- Project files: binding an upload's bytes as a file, reading, listing, indexing
-- requests, deletion.
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
           else format('This upload expired %s minutes after preparation; prepare a new one.',
                       (app.limit('upload.lifetimeSeconds') / 60)::integer) end,
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
    perform app.index_queue_document(d);
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
  page_size integer := app.page_size(args->>'limit', 'page.files.maxSize');
  filters jsonb;
  page_start record;
  rows jsonb;
  positions jsonb[];
begin
  if scope not in ('all', 'root') then
    folder := app.folder_in_project(p.id, scope);
    scope := folder.id::text;
  end if;
  filters := jsonb_build_object('projectId', p.id, 'folderId', scope);
  page_start := app.keyset_resume(args->>'cursor', 'files', filters);
  select jsonb_agg(app.file_json(d) order by d.created_at desc, d.id desc),
         array_agg(app.keyset_position(d.created_at, d.id) order by d.created_at desc, d.id desc)
    into rows, positions
    from (select * from app.documents d
           where d.organization_id = p.organization_id and d.project_id = p.id
             and d.kind = 'file' and d.trashed_at is null
             and (d.created_at, d.id) < (page_start.after_created, page_start.after_id)
             and case scope when 'all' then true
                            when 'root' then d.folder_id is null
                            else d.folder_id = folder.id end
           order by d.created_at desc, d.id desc
           limit page_size + 1) d;
  return app.keyset_page('files', 'files', filters, page_size, rows, positions);
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

-- A document's indexing asked for again (a project file's or a hub document's
-- retry), charged to the caller's retry budget. It lifts the opt-out made at binding.
-- The document first, then its index row: the order the pipeline locks them in
-- (app.index_lock_document), so the two never deadlock. One indexing job per
-- document: repeated retries replace the queued one.
create or replace function app.document_retry_indexing(d app.documents) returns jsonb language plpgsql as $$
begin
  perform app.spend_user_budget('retryIndexing', 'Too many indexing retries; retry after the indicated seconds.');
  update app.documents
     set skip_rag_indexing = false, indexing_status = 'indexing', indexing_error = null, updated_at = app.now()
   where organization_id = d.organization_id and id = d.id
  returning * into d;
  perform app.index_queue_document(d);
  return jsonb_build_object('status', 'indexing');
end $$;

create or replace function api.file_retry_indexing(args jsonb) returns jsonb language plpgsql as $$
declare
  p app.projects := app.project_for_write(args->>'id');
begin
  return app.document_retry_indexing(app.file_in_project(p.id, args->>'documentId'));
end $$;

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

grant execute on function app.file_json, api.file_bind, app.file_in_project, api.files_list, api.file_get,
  api.file_content, app.document_retry_indexing, api.file_retry_indexing, api.file_delete to api;
