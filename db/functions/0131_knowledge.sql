-- Knowledge (docs/knowledge.md): hub documents (rows of app.documents of kind
-- 'document', the organization's, outside every project), knowledge entries, and the
-- knowledge search over them and the project files the caller may read.
--
-- Every member reads hub documents and entries; Editors and above write them (the
-- policies of db/policies/documents.sql and knowledge_entries.sql decide, the checks
-- below only name the refusal). Every write queues the row for indexing in the same
-- transaction (app.index_queue_document, app.index_queue_entry); the search runs
-- app.search_chunks with the caller's rights, so index_chunks' policy keeps out every
-- passage of a document or entry the caller cannot read.

-- Writing the organization's knowledge needs an editing role.
create or replace function app.knowledge_writer() returns void language plpgsql stable as $$
begin
  if not app.has_editing_role() then
    perform app.fail('ROLE_FORBIDDEN', 403, 'Changing the organization''s documents and knowledge needs the Editor role or above.');
  end if;
end $$;

-- ---------------------------------------------------------------------------
-- Hub documents

create or replace function app.hub_document_json(d app.documents) returns jsonb language sql stable as $$
  select jsonb_build_object(
    'id', d.id, 'name', d.file_name, 'mimeType', d.mime_type, 'size', d.size_bytes, 'metadata', d.metadata,
    'source', case when d.object_key is null then 'inline' else 'upload' end,
    'indexing', jsonb_build_object('status', d.indexing_status, 'error', d.indexing_error),
    'createdAt', app.ms(d.created_at), 'updatedAt', app.ms(d.updated_at))
$$;

-- A hub document of the caller's organization, or 404 DOCUMENT_NOT_FOUND alike for ids
-- that are missing, trashed, another organization's or project files.
create or replace function app.hub_document(document text) returns app.documents language plpgsql stable as $$
declare
  d app.documents;
begin
  select * into d from app.documents
   where organization_id = app.org_id() and id = app.as_uuid(document) and kind = 'document' and trashed_at is null;
  if d.id is null then
    perform app.fail('DOCUMENT_NOT_FOUND', 404, 'Document not found.');
  end if;
  return d;
end $$;

-- A document's name as stored: trimmed, NFC-normalized, 1 to 255 characters, no
-- control character. An inline document's name is a title (slashes allowed); an
-- uploaded one's is a file name (app.file_name), whose extension gives its type.
create or replace function app.document_name(raw text) returns text language plpgsql immutable as $$
declare
  cleaned text := normalize(app.trim_space(coalesce(raw, '')), nfc);
begin
  if cleaned = '' or length(cleaned) > 255 or cleaned ~ '[[:cntrl:]]' then
    perform app.invalid_body('name', 'must be 1 to 255 characters with no control character');
  end if;
  return cleaned;
end $$;

create or replace function api.documents_list(args jsonb) returns jsonb language plpgsql stable as $$
declare
  page_size integer := app.page_size(args->>'limit', 'page.documents.maxSize');
  filters jsonb := '{}';
  page_start record := app.keyset_resume(args->>'cursor', 'documents', filters);
  rows jsonb;
  positions jsonb[];
begin
  select jsonb_agg(app.hub_document_json(d) order by d.created_at desc, d.id desc),
         array_agg(app.keyset_position(d.created_at, d.id) order by d.created_at desc, d.id desc)
    into rows, positions
    from (select * from app.documents d
           where d.organization_id = app.org_id() and d.kind = 'document' and d.trashed_at is null
             and (d.created_at, d.id) < (page_start.after_created, page_start.after_id)
           order by d.created_at desc, d.id desc
           limit page_size + 1) d;
  return app.keyset_page('page', 'documents', filters, page_size, rows, positions) - 'cursor';
end $$;

-- Creates a hub document: inline ({name, content, mimeType?, metadata?}) or from an
-- organization upload ({name?, uploadId, fileId}), held to the rules of project
-- files (supported types, the organization's upload policy and size). Either way it
-- is queued for indexing at once.
create or replace function api.document_create(args jsonb) returns jsonb language plpgsql as $$
declare
  inline_limit bigint := app.limit('document.inlineMaxBytes');
  meta jsonb := coalesce(args->'metadata', '{}');
  u app.uploads;
  stored_name text;
  file_type app.file_types;
  blob jsonb := args->'observed'->'blob';
  limit_bytes bigint;
  d app.documents;
begin
  perform app.knowledge_writer();
  if octet_length(meta::text) > app.limit('document.metadataMaxBytes') then
    perform app.invalid_body('metadata', format('must be at most %s bytes as JSON', app.limit('document.metadataMaxBytes')));
  end if;

  if args ? 'content' then
    if octet_length(args->>'content') > inline_limit then
      perform app.fail('BODY_TOO_LARGE', 413,
        format('Inline document content is limited to %s bytes (UTF-8); upload larger documents instead.', inline_limit),
        jsonb_build_object('limitBytes', inline_limit, 'size', octet_length(args->>'content')));
    end if;
    insert into app.documents (organization_id, kind, project_id, file_name, mime_type, size_bytes, inline_content, metadata,
                               skip_rag_indexing, indexing_status, created_by)
    values (app.org_id(), 'document', null, app.document_name(args->>'name'), coalesce(args->>'mimeType', 'text/plain'),
            octet_length(args->>'content'), args->>'content', meta, false, 'indexing', app.user_id())
    returning * into d;
  else
    perform app.object_store_ready(args->'observed');
    select * into u from app.uploads
     where organization_id = app.org_id() and id = app.as_uuid(args->>'uploadId') and project_id is null
     for update;
    if u.id is null or u.bound_at is not null or u.expires_at <= app.now() then
      perform app.fail('BLOB_NOT_FOUND', 404,
        case when u.id is null then 'No document upload of this organization has that uploadId.'
             when u.bound_at is not null then 'This upload is already bound to a document; an uploadId is used once.'
             else format('This upload expired %s minutes after preparation; prepare a new one.',
                         (app.limit('upload.lifetimeSeconds') / 60)::integer) end,
        jsonb_build_object('uploadId', args->>'uploadId',
          'reason', case when u.id is null then 'unknown' when u.bound_at is not null then 'bound' else 'expired' end));
    end if;
    if args->>'fileId' is distinct from u.object_key then
      perform app.invalid_body('fileId', 'is not the s3Ref of this upload');
    end if;
    if coalesce(args->>'name', u.file_name) is null then
      perform app.invalid_body('name', 'is required when the upload was prepared without a fileName');
    end if;
    stored_name := app.file_name(coalesce(args->>'name', u.file_name));
    file_type := app.file_type_for(stored_name);
    if blob is null or jsonb_typeof(blob) <> 'object' then
      -- Nothing is written: the same uploadId binds once the bytes are there.
      perform app.fail('BLOB_NOT_FOUND', 404, 'The upload''s bytes have not arrived; PUT them to the upload url, then create again.',
        jsonb_build_object('uploadId', u.id, 'reason', 'pending'));
    end if;
    limit_bytes := app.upload_limit_bytes();
    if (blob->>'size')::bigint > limit_bytes then
      perform app.fail('FILE_TOO_LARGE', 400, format('Files are limited to %s bytes.', limit_bytes),
        jsonb_build_object('limitBytes', limit_bytes, 'size', (blob->>'size')::bigint));
    end if;
    insert into app.documents (organization_id, kind, project_id, file_name, mime_type, size_bytes, object_key, object_etag,
                               metadata, skip_rag_indexing, indexing_status, created_by)
    values (app.org_id(), 'document', null, stored_name, file_type.mime_type, (blob->>'size')::bigint, u.object_key,
            blob->>'etag', meta, false, 'indexing', app.user_id())
    returning * into d;
    update app.uploads set bound_at = app.now(), document_id = d.id
     where organization_id = u.organization_id and id = u.id;
  end if;

  perform app.index_queue_document(d);
  perform app.audit('document.created', 'document', d.id::text,
    jsonb_build_object('name', d.file_name, 'size', d.size_bytes, 'source', case when d.object_key is null then 'inline' else 'upload' end));
  return app.hub_document_json(d);
end $$;

-- An organization upload for a hub document: the presigned PUT is signed by the server.
create or replace function api.document_upload_prepare(args jsonb) returns jsonb language plpgsql as $$
begin
  perform app.knowledge_writer();
  return app.upload_open(app.org_id(), null, args);
end $$;

create or replace function api.document_get(args jsonb) returns jsonb language plpgsql stable as $$
begin
  return app.hub_document_json(app.hub_document(args->>'id'));
end $$;

-- The document's text: inline content as given; for an uploaded document the text
-- indexing extracted, null until it is indexed (and when indexing failed).
create or replace function api.document_content(args jsonb) returns jsonb language plpgsql stable as $$
declare
  d app.documents := app.hub_document(args->>'id');
begin
  return jsonb_build_object('id', d.id, 'content', coalesce(d.inline_content,
    (select f.content from app.index_files f where f.document_id = d.id and f.status = 'completed')));
end $$;

create or replace function api.document_retry_indexing(args jsonb) returns jsonb language plpgsql as $$
declare
  d app.documents := app.hub_document(args->>'id');
begin
  perform app.knowledge_writer();
  return app.document_retry_indexing(d);
end $$;

create or replace function api.document_delete(args jsonb) returns jsonb language plpgsql as $$
declare
  d app.documents := app.hub_document(args->>'id');
begin
  perform app.knowledge_writer();
  -- Its index row and passages go by foreign key, its object (an upload's) by the
  -- documents_purge_objects trigger.
  delete from app.documents where organization_id = d.organization_id and id = d.id;
  perform app.audit('document.deleted', 'document', d.id::text, jsonb_build_object('name', d.file_name));
  return null;
end $$;

-- ---------------------------------------------------------------------------
-- Knowledge entries

create or replace function app.knowledge_entry_json(k app.knowledge_entries) returns jsonb language sql stable as $$
  select jsonb_build_object('id', k.id, 'title', k.title, 'content', k.content, 'tags', to_jsonb(k.tags),
    'indexing', (select jsonb_build_object(
                   'status', case f.status when 'completed' then 'indexed' when 'failed' then 'failed' else 'indexing' end,
                   'error', case when f.status = 'failed' then f.reason end)
                   from (select null) nothing
                   left join app.index_files f on f.knowledge_entry_id = k.id),
    'createdAt', app.ms(k.created_at), 'updatedAt', app.ms(k.updated_at))
$$;

create or replace function app.knowledge_entry(entry text) returns app.knowledge_entries language plpgsql stable as $$
declare
  k app.knowledge_entries;
begin
  select * into k from app.knowledge_entries where organization_id = app.org_id() and id = app.as_uuid(entry);
  if k.id is null then
    perform app.fail('KNOWLEDGE_ENTRY_NOT_FOUND', 404, 'Knowledge entry not found.');
  end if;
  return k;
end $$;

-- Tags as stored: trimmed (the request shape checked their count and length), the
-- first of repeated ones kept.
create or replace function app.knowledge_tags(tags jsonb) returns text[] language sql immutable as $$
  select coalesce(array_agg(tag order by first_at), '{}')
    from (select app.trim_space(t) as tag, min(n) as first_at
            from jsonb_array_elements_text(coalesce(tags, '[]')) with ordinality as e(t, n)
           group by 1) distinct_tags
$$;

create or replace function api.knowledge_entries_list(args jsonb) returns jsonb language plpgsql stable as $$
declare
  page_size integer := app.page_size(args->>'limit', 'page.knowledgeEntries.maxSize');
  filters jsonb := '{}';
  page_start record := app.keyset_resume(args->>'cursor', 'knowledge_entries', filters);
  rows jsonb;
  positions jsonb[];
begin
  select jsonb_agg(app.knowledge_entry_json(k) order by k.created_at desc, k.id desc),
         array_agg(app.keyset_position(k.created_at, k.id) order by k.created_at desc, k.id desc)
    into rows, positions
    from (select * from app.knowledge_entries k
           where k.organization_id = app.org_id()
             and (k.created_at, k.id) < (page_start.after_created, page_start.after_id)
           order by k.created_at desc, k.id desc
           limit page_size + 1) k;
  return app.keyset_page('page', 'knowledge_entries', filters, page_size, rows, positions) - 'cursor';
end $$;

create or replace function api.knowledge_entry_create(args jsonb) returns jsonb language plpgsql as $$
declare
  k app.knowledge_entries;
begin
  perform app.knowledge_writer();
  insert into app.knowledge_entries (organization_id, title, content, tags, created_by, updated_by)
  values (app.org_id(), app.trim_space(args->>'title'), args->>'content', app.knowledge_tags(args->'tags'),
          app.user_id(), app.user_id())
  returning * into k;
  perform app.index_queue_entry(k);
  perform app.audit('knowledge_entry.created', 'knowledge_entry', k.id::text, jsonb_build_object('title', k.title));
  return app.knowledge_entry_json(k);
end $$;

create or replace function api.knowledge_entry_get(args jsonb) returns jsonb language plpgsql stable as $$
begin
  return app.knowledge_entry_json(app.knowledge_entry(args->>'id'));
end $$;

-- A partial update: the keys sent replace the stored ones. A change of title or
-- content (the indexed text) queues the entry for indexing again; its earlier
-- passages answer searches until the new ones replace them.
create or replace function api.knowledge_entry_update(args jsonb) returns jsonb language plpgsql as $$
declare
  k app.knowledge_entries := app.knowledge_entry(args->>'id');
  changed app.knowledge_entries;
begin
  perform app.knowledge_writer();
  select * into k from app.knowledge_entries where organization_id = k.organization_id and id = k.id for update;
  -- Deleted between the read and the lock.
  if k.id is null then
    perform app.fail('KNOWLEDGE_ENTRY_NOT_FOUND', 404, 'Knowledge entry not found.');
  end if;
  update app.knowledge_entries
     set title = coalesce(app.trim_space(args->>'title'), title),
         content = coalesce(args->>'content', content),
         tags = case when args ? 'tags' then app.knowledge_tags(args->'tags') else tags end,
         updated_by = app.user_id(), updated_at = app.now()
   where organization_id = k.organization_id and id = k.id
  returning * into changed;
  if changed.title is distinct from k.title or changed.content is distinct from k.content then
    perform app.index_queue_entry(changed);
  end if;
  perform app.audit('knowledge_entry.updated', 'knowledge_entry', k.id::text,
    jsonb_build_object('fields', (select coalesce(jsonb_agg(key order by key), '[]')
                                    from jsonb_object_keys(args - 'id') key)));
  return app.knowledge_entry_json(changed);
end $$;

create or replace function api.knowledge_entry_delete(args jsonb) returns jsonb language plpgsql as $$
declare
  k app.knowledge_entries := app.knowledge_entry(args->>'id');
begin
  perform app.knowledge_writer();
  -- Its index row and passages go by foreign key.
  delete from app.knowledge_entries where organization_id = k.organization_id and id = k.id;
  perform app.audit('knowledge_entry.deleted', 'knowledge_entry', k.id::text, jsonb_build_object('title', k.title));
  return null;
end $$;

-- ---------------------------------------------------------------------------
-- Knowledge search

-- Ranked passages of the knowledge entries, hub documents and project files the
-- caller may read (app.search_chunks under the caller's policies: a passage of a
-- project the caller cannot see never reaches the ranking). With projectId, project
-- files only of that project (which the caller must see); entries and hub documents
-- always. The server embeds the query with the organization's embeddings model (the
-- request role never holds provider keys) and passes the vector as
-- observed.queryEmbedding; without one, ranking fuses full text and similar words.
create or replace function api.knowledge_search(args jsonb) returns jsonb language plpgsql stable as $$
declare
  lang regconfig := app.search_language(coalesce(args->>'language', 'english'));
  query_embedding real[] := case when jsonb_typeof(args->'observed'->'queryEmbedding') = 'array'
                                 then array(select jsonb_array_elements_text(args->'observed'->'queryEmbedding')::real) end;
  p app.projects;
  files text[];
  results jsonb;
begin
  if lang is null then
    perform app.invalid_body('language', 'must name a text search configuration of PostgreSQL (english, german, simple, ...)');
  end if;
  if args->>'projectId' is not null then
    p := app.project_for_read(args->>'projectId');
    select coalesce(array_agg(f.file_id), '{}') into files
      from app.index_files f
     where f.organization_id = p.organization_id
       and (f.knowledge_entry_id is not null
            or f.document_id in (select d.id from app.documents d
                                  where d.organization_id = p.organization_id and (d.kind = 'document' or d.project_id = p.id)));
  end if;
  select coalesce(jsonb_agg(jsonb_build_object(
           'score', round(s.score::numeric, 6), 'content', s.content, 'page', s.page, 'heading', s.heading,
           'source', case when k.id is not null then jsonb_build_object('type', 'knowledge_entry', 'id', k.id, 'name', k.title)
                          when d.kind = 'document' then jsonb_build_object('type', 'document', 'id', d.id, 'name', d.file_name)
                          else jsonb_strip_nulls(jsonb_build_object('type', 'file', 'id', d.id, 'name', d.file_name,
                                                                    'projectId', d.project_id)) end)
           order by s.score desc, s.file_id, s.ordinal), '[]')
    into results
    from app.search_chunks(args->>'query', files, coalesce((args->>'topK')::integer, 8),
                           (args->>'similarityThreshold')::double precision, query_embedding, lang, app.org_id()) s
    left join app.documents d on d.id = s.document_id
    left join app.knowledge_entries k on k.id = s.knowledge_entry_id
   where d.id is not null or k.id is not null;
  return jsonb_build_object('results', results);
end $$;

grant execute on function app.knowledge_writer, app.hub_document_json, app.hub_document, app.document_name,
  api.documents_list, api.document_create, api.document_upload_prepare, api.document_get, api.document_content,
  api.document_retry_indexing, api.document_delete, app.knowledge_entry_json, app.knowledge_entry, app.knowledge_tags,
  api.knowledge_entries_list, api.knowledge_entry_create, api.knowledge_entry_get, api.knowledge_entry_update,
  api.knowledge_entry_delete, api.knowledge_search to api;
