-- Project files: uploads handed to the object store, and the documents they become.

-- The file types the service accepts, each with the media type it is served as. The
-- list is a product rule (an organization policy can only narrow it), so it lives
-- with the other rules rather than in a general-purpose MIME table.
create table app.file_types (
  extension text primary key check (extension ~ '^[a-z0-9]+$'),
  mime_type text not null,
  -- Text the service extracts itself while no indexing service reads it.
  plain_text boolean not null default false
);
insert into app.file_types (extension, mime_type, plain_text) values
  ('pdf', 'application/pdf', false),
  ('doc', 'application/msword', false),
  ('docx', 'application/vnd.openxmlformats-officedocument.wordprocessingml.document', false),
  ('odt', 'application/vnd.oasis.opendocument.text', false),
  ('ppt', 'application/vnd.ms-powerpoint', false),
  ('pptx', 'application/vnd.openxmlformats-officedocument.presentationml.presentation', false),
  ('xls', 'application/vnd.ms-excel', false),
  ('xlsx', 'application/vnd.openxmlformats-officedocument.spreadsheetml.sheet', false),
  ('csv', 'text/csv', true),
  ('txt', 'text/plain', true),
  ('md', 'text/markdown', true),
  ('json', 'application/json', true),
  ('yaml', 'application/yaml', true),
  ('yml', 'application/yaml', true),
  ('py', 'text/x-python', true),
  ('jpg', 'image/jpeg', false),
  ('jpeg', 'image/jpeg', false),
  ('png', 'image/png', false),
  ('gif', 'image/gif', false),
  ('webp', 'image/webp', false),
  ('ac2', 'application/octet-stream', false);

-- An organization's upload policy: null columns leave the service defaults.
alter table app.organizations
  add column upload_max_bytes bigint check (upload_max_bytes between 1 and 104857600),
  add column upload_extensions text[] check (upload_extensions is null or cardinality(upload_extensions) > 0);

-- A prepared upload: the presigned PUT's target, until it is bound or swept.
create table app.uploads (
  organization_id uuid not null references app.organizations (id) on delete cascade,
  id uuid not null default gen_random_uuid(),
  project_id uuid not null,
  created_by uuid not null references app.users (id) on delete cascade,
  -- What the client declared at preparation (all optional).
  file_name text,
  content_type text,
  declared_size bigint,
  -- The object key, handed out as s3Ref; a bound file keeps it.
  object_key text not null unique,
  expires_at timestamptz not null,
  bound_at timestamptz,
  document_id uuid,
  created_at timestamptz not null default app.now(),
  primary key (organization_id, id),
  unique (id),
  foreign key (organization_id, project_id) references app.projects (organization_id, id) on delete cascade
);
create index uploads_expiry_idx on app.uploads (organization_id, expires_at);

-- Documents: for now the files bound into projects (kind 'file'). Trashing and other
-- kinds arrive with the document families; a file read treats them as absent.
create table app.documents (
  organization_id uuid not null references app.organizations (id) on delete cascade,
  id uuid not null default gen_random_uuid(),
  project_id uuid,
  folder_id uuid,
  kind text not null default 'file' check (kind in ('file')),
  file_name text not null check (file_name <> '' and length(file_name) <= 255),
  mime_type text not null,
  size_bytes bigint check (size_bytes >= 0),
  object_key text unique,
  -- The stored object's ETag when bound: bytes replaced afterwards are never served.
  object_etag text,
  skip_rag_indexing boolean not null default true,
  indexing_status text not null default 'skipped'
    check (indexing_status in ('skipped', 'indexing', 'indexed', 'failed')),
  indexing_error text,
  -- Text the service extracted itself (plain-text types).
  extracted_text text,
  created_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default app.now(),
  updated_at timestamptz not null default app.now(),
  trashed_at timestamptz,
  primary key (organization_id, id),
  unique (id),
  foreign key (organization_id, project_id) references app.projects (organization_id, id) on delete cascade,
  foreign key (organization_id, folder_id) references app.folders (organization_id, id) on delete cascade
);
create index documents_project_created_idx on app.documents (organization_id, project_id, created_at desc, id desc);
create index documents_folder_idx on app.documents (organization_id, folder_id);
