-- Objects follow their rows: whatever removes a file's row or an unbound upload's
-- removes its object from the store, by a job enqueued in the same transaction.

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

-- The triggers fire for the request role's deletes too (a file, a folder's cascade).
grant execute on function app.purge_objects to api;
