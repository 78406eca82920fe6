-- File maintenance for the worker (owner connection): lapsed uploads, documents past
-- retention, text extraction. Nothing here is granted to the request role.

-- Lapsed uploads, a batch at a time: removing the rows purges the blobs never bound
-- (uploads_purge_objects); a bound upload's object is its file's and stays.
create or replace function app.worker_forget_lapsed_uploads(organization uuid, batch integer) returns integer
language sql as $$
  with lapsed as (
    select u.organization_id, u.id from app.uploads u
     where (organization is null or u.organization_id = organization)
       and u.expires_at < app.now() - app.limit('upload.lapsedKeepSeconds') * interval '1 second'
     order by u.expires_at
     limit batch
     for update skip locked
  ), gone as (
    delete from app.uploads u using lapsed l where u.organization_id = l.organization_id and u.id = l.id returning 1
  )
  select count(*)::integer from gone
$$;

-- How long the files of a deleted project stay in retention before they go for good.
create or replace function app.document_retention() returns interval language plpgsql stable as $$
begin
  return app.limit('document.retentionSeconds') * interval '1 second';
end $$;

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

-- A document queued for indexing by a release before the index store, queued anew.
create or replace function app.worker_requeue_document(organization uuid, document uuid) returns void language plpgsql as $$
declare
  d app.documents;
begin
  select * into d from app.documents
   where organization_id = organization and id = document and indexing_status = 'indexing' and trashed_at is null;
  if d.id is not null then
    perform app.index_queue_document(d);
  end if;
end $$;

drop function if exists app.worker_document_to_index(uuid, uuid);
drop function if exists app.worker_document_indexed(uuid, uuid, text, text);
drop function if exists app.worker_lapsed_uploads(uuid, integer);
drop function if exists app.worker_forget_uploads(uuid, uuid[]);
drop function if exists app.worker_organizations_with_lapsed_uploads();
