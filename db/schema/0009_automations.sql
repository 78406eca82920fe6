-- Automations: versioned documents, project installs, and their runs.

create table app.automations (
  organization_id uuid not null references app.organizations (id) on delete cascade,
  id uuid not null default gen_random_uuid(),
  -- A `/`-separated path; `__` is how URLs write `/`, so a name never holds it.
  name text not null check (name ~ '^[A-Za-z0-9][A-Za-z0-9._-]*(/[A-Za-z0-9][A-Za-z0-9._-]*)*$'
                            and position('__' in name) = 0 and length(name) <= 200),
  description text not null default '',
  latest_version integer not null default 1,
  deployed_version integer,
  created_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default app.now(),
  updated_at timestamptz not null default app.now(),
  primary key (organization_id, id),
  unique (id)
);
create unique index automations_name_key on app.automations (organization_id, lower(name));

create table app.automation_versions (
  organization_id uuid not null,
  automation_id uuid not null,
  version integer not null check (version >= 1),
  document jsonb not null,
  -- The latest test verdict of this version; null until tested or without tests.
  tests_passed boolean,
  tests_checked_at timestamptz,
  created_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default app.now(),
  primary key (organization_id, automation_id, version),
  foreign key (organization_id, automation_id) references app.automations (organization_id, id) on delete cascade
);

create table app.automation_installs (
  organization_id uuid not null,
  automation_id uuid not null,
  project_id uuid not null,
  created_by uuid references app.users (id) on delete set null,
  created_at timestamptz not null default app.now(),
  primary key (organization_id, automation_id, project_id),
  foreign key (organization_id, automation_id) references app.automations (organization_id, id) on delete cascade,
  foreign key (organization_id, project_id) references app.projects (organization_id, id) on delete cascade
);
create index automation_installs_project_idx on app.automation_installs (organization_id, project_id);

create table app.runs (
  organization_id uuid not null references app.organizations (id) on delete cascade,
  id uuid not null default gen_random_uuid(),
  -- Null once the automation is deleted: its runs stay listed and readable by name.
  automation_id uuid,
  automation_name text not null,
  version integer not null,
  -- The document the run executes, so it outlives a deleted automation.
  document jsonb not null,
  mode text not null check (mode in ('live', 'mock')),
  status text not null default 'queued'
    check (status in ('queued', 'running', 'waiting', 'completed', 'failed', 'cancelled')),
  waiting_for text check (waiting_for in ('approval', 'ask', 'agent', 'repeat')),
  detail text,
  failure_code text,
  input jsonb not null default '{}',
  output jsonb,
  trace jsonb not null default '[]',
  effects jsonb not null default '[]',
  -- The engine's place in the graph (next step, step outputs, loops, resumptions);
  -- seq counts committed steps so a stale worker cannot commit over a newer one.
  state jsonb not null default '{}',
  seq integer not null default 0,
  project_id uuid,
  started_by uuid references app.users (id) on delete set null,
  trigger_id uuid,
  started_via text check (started_via in ('schedule', 'webhook', 'event')),
  idempotency_key text,
  cancel_requested_at timestamptz,
  deadline_at timestamptz,
  resume_at timestamptz,
  -- When a worker last showed life on the run; a stale one is picked up again.
  heartbeat_at timestamptz,
  created_at timestamptz not null default app.now(),
  started_at timestamptz,
  finished_at timestamptz,
  updated_at timestamptz not null default app.now(),
  primary key (organization_id, id),
  unique (id),
  check ((status = 'waiting') = (waiting_for is not null)),
  check ((status = 'failed') = (failure_code is not null)),
  foreign key (organization_id, automation_id) references app.automations (organization_id, id) on delete set null (automation_id),
  foreign key (organization_id, project_id) references app.projects (organization_id, id) on delete cascade
);
create unique index runs_idempotency_key on app.runs (organization_id, started_by, automation_name, idempotency_key)
  where idempotency_key is not null;
create index runs_created_idx on app.runs (organization_id, created_at desc, id desc);
create index runs_automation_idx on app.runs (organization_id, automation_id, created_at desc, id desc);
create index runs_project_idx on app.runs (organization_id, project_id, created_at desc, id desc);
create index runs_live_idx on app.runs (organization_id, automation_id) where status in ('queued', 'running', 'waiting');

-- A person's decision a run waits for.
create table app.run_approvals (
  organization_id uuid not null,
  id uuid not null default gen_random_uuid(),
  run_id uuid not null,
  step_slug text not null,
  title text not null,
  status text not null default 'pending' check (status in ('pending', 'approved', 'rejected', 'void')),
  comment text,
  decided_by uuid references app.users (id) on delete set null,
  decided_at timestamptz,
  created_at timestamptz not null default app.now(),
  primary key (organization_id, id),
  unique (id),
  foreign key (organization_id, run_id) references app.runs (organization_id, id) on delete cascade
);

-- A question a run waits on, with typed fields.
create table app.run_asks (
  organization_id uuid not null,
  id uuid not null default gen_random_uuid(),
  run_id uuid not null,
  step_slug text not null,
  question text not null,
  fields jsonb not null default '[]',
  status text not null default 'open' check (status in ('open', 'answered', 'void')),
  answer jsonb,
  answered_by uuid references app.users (id) on delete set null,
  actor text,
  answered_at timestamptz,
  created_at timestamptz not null default app.now(),
  primary key (organization_id, id),
  unique (id),
  foreign key (organization_id, run_id) references app.runs (organization_id, id) on delete cascade
);
