-- Past these policies: none.
-- A passage is readable where its document or knowledge entry or website page is: a search by a
-- member never returns a passage from a project they cannot see or a trashed file.
-- Only the pipeline writes chunks.
alter table app.index_chunks enable row level security;
alter table app.index_chunks force row level security;
select app.drop_policies('app.index_chunks');
grant select on app.index_chunks to api;

create policy index_chunks_select on app.index_chunks for select to api
  using (app.can_read_indexed(organization_id, document_id, knowledge_entry_id, website_page_id));
