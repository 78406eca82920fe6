-- Project folders: a tree of at most 20 levels, one name per parent (case-insensitive).
create table app.folders (
  organization_id uuid not null,
  project_id uuid not null,
  id uuid not null default gen_random_uuid(),
  parent_id uuid,
  name text not null check (name <> '' and length(name) <= 128),
  -- 1 at the root.
  depth integer not null check (depth between 1 and 20),
  created_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default app.now(),
  primary key (organization_id, id),
  unique (id),
  foreign key (organization_id, project_id) references app.projects (organization_id, id) on delete cascade,
  foreign key (organization_id, parent_id) references app.folders (organization_id, id) on delete cascade
);
-- Root folders share the nil parent, so the rule holds at the root too.
create unique index folders_name_key on app.folders
  (organization_id, project_id, coalesce(parent_id, '00000000-0000-0000-0000-000000000000'), lower(name));
create index folders_parent_idx on app.folders (organization_id, parent_id);
