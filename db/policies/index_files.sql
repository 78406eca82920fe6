-- Past these policies: app.index_queue_platform (a document's or entry's write queues
-- it for indexing; the index row is the pipeline's, which no member writes).
-- An indexed file is readable where its document or knowledge entry or website page is: its status
-- and extracted text follow the row they came from. Uploads to the indexing service
-- (no organization) are never readable by a member. Only the pipeline writes.
alter table app.index_files enable row level security;
alter table app.index_files force row level security;
select app.drop_policies('app.index_files');
grant select on app.index_files to api;

create policy index_files_select on app.index_files for select to api
  using (app.can_read_indexed(organization_id, document_id, knowledge_entry_id, website_page_id));
