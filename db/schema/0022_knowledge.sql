-- Knowledge: hub documents (organization documents outside any project), knowledge
-- entries, and the index store the indexing pipeline fills: every indexed file's
-- status and extracted text, and its chunks ranked by full text, trigrams and, when
-- the organization configures an embeddings model, vectors.

create extension if not exists pg_trgm;
-- pgvector where the server has it (the compose image does): vector similarity then
-- runs in the extension; without it, in SQL over the same real[] column.
do $$
begin
  if exists (select 1 from pg_available_extensions where name = 'vector') then
    create extension if not exists vector;
  end if;
exception when insufficient_privilege then
  raise notice 'pgvector is available but this role cannot create it; vector similarity runs in SQL';
end $$;
-- Functions created after 0011 keep EXECUTE from PUBLIC revoked, the extensions' too;
-- the request role ranks passages with them (app.search_chunks runs with the
-- caller's rights: word_similarity, the <% operator, pgvector's distance and casts).
do $$
declare
  f regprocedure;
begin
  for f in select p.oid::regprocedure from pg_proc p
             join pg_depend d on d.classid = 'pg_proc'::regclass and d.objid = p.oid and d.deptype = 'e'
             join pg_extension e on e.oid = d.refobjid
            where e.extname in ('pg_trgm', 'vector') loop
    execute format('grant execute on function %s to api', f);
  end loop;
end $$;

-- Hub documents are rows of app.documents of kind 'document': never in a project,
-- their bytes either inline (text given in the request) or an object from an upload.
alter table app.documents drop constraint documents_kind_check;
alter table app.documents
  add constraint documents_kind_check check (kind in ('file', 'document')),
  add constraint documents_hub_outside_projects check (kind = 'file' or project_id is null),
  add column metadata jsonb not null default '{}' check (jsonb_typeof(metadata) = 'object'),
  add column inline_content text;
create index documents_hub_created_idx on app.documents (organization_id, created_at desc, id desc) where kind = 'document';

create table app.knowledge_entries (
  organization_id uuid not null references app.organizations (id) on delete cascade,
  id uuid not null default gen_random_uuid(),
  title text not null check (btrim(title) <> '' and length(title) <= 500),
  content text not null check (btrim(content) <> ''),
  tags text[] not null default '{}',
  created_by uuid references app.users (id) on delete set null,
  updated_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default app.now(),
  updated_at timestamptz not null default app.now(),
  primary key (organization_id, id),
  unique (id)
);
create index knowledge_entries_created_idx on app.knowledge_entries (organization_id, created_at desc, id desc);

-- One row per indexed file. file_id is the caller's name for it on the indexing
-- service; platform rows use the document's or entry's id and carry the owner.
create table app.index_files (
  file_id text primary key check (file_id ~ '^[A-Za-z0-9][A-Za-z0-9._:-]{0,254}$'),
  organization_id uuid references app.organizations (id) on delete cascade,
  document_id uuid references app.documents (id) on delete cascade,
  knowledge_entry_id uuid references app.knowledge_entries (id) on delete cascade,
  file_name text not null check (file_name <> '' and length(file_name) <= 255),
  size_bytes bigint check (size_bytes >= 0),
  metadata jsonb not null default '{}' check (jsonb_typeof(metadata) = 'object'),
  language regconfig not null default 'english',
  status text not null check (status in ('queued', 'running', 'completed', 'failed')),
  -- Why it failed, or what a completion without text means (an image with no OCR).
  reason text,
  content text,
  chunk_count integer not null default 0,
  -- Bumped by every new version of the file: a pipeline finishing an older one is ignored.
  revision integer not null default 1,
  attempts integer not null default 0,
  queued_at timestamptz not null default app.now(),
  started_at timestamptz,
  completed_at timestamptz,
  created_at timestamptz not null default app.now(),
  updated_at timestamptz not null default app.now(),
  check (document_id is null or knowledge_entry_id is null),
  check ((document_id is null and knowledge_entry_id is null) or organization_id is not null)
);
create unique index index_files_document_idx on app.index_files (document_id) where document_id is not null;
create unique index index_files_entry_idx on app.index_files (knowledge_entry_id) where knowledge_entry_id is not null;
create index index_files_status_idx on app.index_files (status, queued_at) where status in ('queued', 'running');

-- The bytes of an uploaded file between its arrival and its extraction.
create table app.index_blobs (
  file_id text primary key references app.index_files (file_id) on delete cascade,
  revision integer not null,
  bytes bytea not null
);

create table app.index_chunks (
  file_id text not null references app.index_files (file_id) on delete cascade,
  ordinal integer not null check (ordinal >= 0),
  organization_id uuid references app.organizations (id) on delete cascade,
  document_id uuid,
  knowledge_entry_id uuid,
  content text not null,
  page integer,
  heading text,
  language regconfig not null,
  search tsvector generated always as
    (setweight(to_tsvector(language, coalesce(heading, '')), 'A') || to_tsvector(language, content)) stored,
  embedding real[],
  primary key (file_id, ordinal)
);
create index index_chunks_search_idx on app.index_chunks using gin (search);
create index index_chunks_trigram_idx on app.index_chunks using gin (content gin_trgm_ops);
create index index_chunks_document_idx on app.index_chunks (document_id) where document_id is not null;
create index index_chunks_entry_idx on app.index_chunks (knowledge_entry_id) where knowledge_entry_id is not null;

-- Organization uploads (the bytes of a hub document) belong to no project.
alter table app.uploads alter column project_id drop not null;
