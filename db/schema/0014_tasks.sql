-- Tasks on a project's board, their label catalog and comments; the runs a task
-- starts; notification streams and an organization's language for their export.
-- Row-level security for each table is in db/policies/<table>.sql.

-- The language notifications are exported in when the export names none.
alter table app.organizations add column language text not null default 'en'
  check (language in ('en', 'de', 'fr'));

create table app.tasks (
  organization_id uuid not null,
  project_id uuid not null,
  id uuid not null default gen_random_uuid(),
  -- The task's number in its project (the identifier is the project's key, a dash
  -- and the number). Numbers a racing create lost are not reused.
  number integer not null check (number > 0),
  -- The natural key: the item this task mirrors in another system. Stored trimmed
  -- and NFC-normalized.
  external_system text not null check (external_system <> ''),
  external_id text not null check (external_id <> ''),
  title text not null check (title <> ''),
  description text,
  -- The labels in the order they were sent (task_labels ids).
  label_ids uuid[] not null default '{}',
  external_url text,
  external_state text check (external_state in ('open', 'closed')),
  status text not null default 'backlog'
    check (status in ('backlog', 'todo', 'in_progress', 'in_review', 'done', 'cancelled')),
  -- Who put the task in its status: null for a new task's backlog; 'mirror' when the
  -- source item's state moved it (its park, which the source may lift again);
  -- 'person', 'agent' or 'automation' for a move through the board.
  status_set_by text check (status_set_by in ('mirror', 'person', 'agent', 'automation')),
  status_changed_at timestamptz,
  assignee_user_id uuid references app.users (id) on delete set null,
  assignee_automation_id uuid,
  review_requested_at timestamptz,
  review_requested_by uuid references app.users (id) on delete set null,
  -- The actor a review was requested for (a person or agent named by an act-as caller).
  review_actor text,
  archived_at timestamptz,
  created_by uuid references app.users (id) on delete set null,
  -- The run whose action step created the task, when one did.
  created_by_run_id uuid,
  created_at timestamptz not null default app.now(),
  updated_at timestamptz not null default app.now(),
  primary key (organization_id, id),
  unique (id),
  unique (organization_id, project_id, external_system, external_id),
  unique (organization_id, project_id, number),
  -- A comment's project is its task's project (task_comments' foreign key).
  unique (organization_id, project_id, id),
  check (assignee_user_id is null or assignee_automation_id is null),
  foreign key (organization_id, project_id) references app.projects (organization_id, id) on delete cascade,
  foreign key (organization_id, assignee_automation_id) references app.automations (organization_id, id)
    on delete set null (assignee_automation_id)
);
create index tasks_created_idx on app.tasks (organization_id, project_id, created_at desc, id desc);

-- The last task number handed out per project.
create table app.task_counters (
  organization_id uuid not null,
  project_id uuid not null,
  last_number integer not null,
  primary key (organization_id, project_id),
  foreign key (organization_id, project_id) references app.projects (organization_id, id) on delete cascade
);

-- A project's label catalog: one spelling per name, matched case-insensitively.
create table app.task_labels (
  organization_id uuid not null,
  project_id uuid not null,
  id uuid not null default gen_random_uuid(),
  name text not null check (name <> ''),
  created_at timestamptz not null default app.now(),
  primary key (organization_id, id),
  unique (id),
  foreign key (organization_id, project_id) references app.projects (organization_id, id) on delete cascade
);
create unique index task_labels_name_key on app.task_labels (organization_id, project_id, lower(name));

create table app.task_comments (
  organization_id uuid not null,
  project_id uuid not null,
  task_id uuid not null,
  id uuid not null default gen_random_uuid(),
  author_type text not null check (author_type in ('user', 'automation', 'agent')),
  author_user_id uuid references app.users (id) on delete set null,
  -- The run whose action step wrote the comment.
  author_run_id uuid,
  body text not null check (body <> ''),
  -- The organization members the body mentions with @.
  mentions uuid[] not null default '{}',
  -- A comment written by a run's step carries the step's place, so a step the worker
  -- repeats after a crash writes it once.
  source_key text,
  created_at timestamptz not null default app.now(),
  primary key (organization_id, id),
  unique (id),
  foreign key (organization_id, project_id, task_id) references app.tasks (organization_id, project_id, id) on delete cascade
);
create index task_comments_task_idx on app.task_comments (organization_id, task_id, created_at desc, id desc);
create unique index task_comments_source_key on app.task_comments (organization_id, source_key)
  where source_key is not null;

-- A run a task started (POST .../tasks/{taskId}/start, or runWorkflowSlug on create).
alter table app.runs add column task_id uuid;
alter table app.runs drop constraint runs_started_via_check;
alter table app.runs add constraint runs_started_via_check check (started_via in ('schedule', 'webhook', 'event', 'task'));
create index runs_task_live_idx on app.runs (organization_id, task_id, automation_id)
  where task_id is not null and status in ('queued', 'running', 'waiting');

-- Notifications belong to one stream of their recipient: 'personal' (addressed to
-- them: a mention, an assignment), exported by descending seq, or 'organization'
-- (notices of the organization to its members in a role: a paused schedule), exported
-- by descending creation time.
alter table app.notifications add column stream text not null default 'personal'
  check (stream in ('personal', 'organization'));
alter table app.notifications add column seq bigint generated always as identity;
update app.notifications set stream = 'organization' where kind = 'automation.trigger.paused';
drop index app.notifications_recipient_idx;
create index notifications_personal_idx on app.notifications (organization_id, recipient_id, seq desc)
  where stream = 'personal';
create index notifications_organization_idx on app.notifications (organization_id, recipient_id, created_at desc, id desc)
  where stream = 'organization';

-- Who last bound a trigger (PUT): the person an organization-wide run it starts acts
-- for when its action steps choose a project.
alter table app.automation_triggers add column bound_by uuid references app.users (id) on delete set null;

-- The run whose action step raised an event: its own automation's bindings do not
-- hear it, so an automation never sets itself off again.
alter table app.events add column source_run_id uuid;

update app.platform_events set raised = true
 where name in ('task.created', 'task.status_changed', 'comment.created', 'comment.mentioned');
