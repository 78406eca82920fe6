-- Triggers: one binding per automation (a schedule, a webhook or a platform event),
-- the webhook deliveries remembered for deduplication, the event outbox, and the
-- notifications a paused schedule sends. Row-level security for each table is in
-- db/policies/<table>.sql.

create table app.automation_triggers (
  organization_id uuid not null,
  id uuid not null default gen_random_uuid(),
  automation_id uuid not null,
  kind text not null check (kind in ('schedule', 'webhook', 'event')),
  enabled boolean not null default true,
  -- schedule: the five-field expression as written, its zone (null: UTC), and the
  -- expression expanded by the server's cron parser into the sets app.cron_next
  -- matches against ({minutes, hours, days, months, weekdays, anyDay, anyWeekday}).
  cron text,
  timezone text,
  cron_fields jsonb,
  -- The next occurrence the schedule tick starts a run for; null when none can come.
  next_due_at timestamptz,
  -- The instant the tick last handled this schedule through: occurrences up to it are
  -- done, so a PUT racing a tick never brings one back.
  due_through timestamptz,
  -- event: the platform event it listens to.
  event text,
  -- webhook: the SHA-256 of the URL token. The plaintext is never stored.
  token_hash bytea,
  -- Health. bound_at restarts with a binding of another kind: runs started before it
  -- belong to the old binding and move none of these. The last run started is read
  -- from the runs themselves (runs_trigger_idx), so starting one writes nothing here:
  -- a busy webhook's deliveries never queue on this row.
  bound_at timestamptz not null default app.now(),
  last_skipped_at timestamptz,
  last_skip_reason text check (last_skip_reason in ('not_deployed', 'unusable_cron', 'start_refused', 'paused_after_failures')),
  consecutive_failures integer not null default 0 check (consecutive_failures >= 0),
  last_failed_at timestamptz,
  last_failure_code text,
  last_failed_run_id uuid,
  created_at timestamptz not null default app.now(),
  updated_at timestamptz not null default app.now(),
  primary key (organization_id, id),
  unique (id),
  unique (organization_id, automation_id),
  foreign key (organization_id, automation_id) references app.automations (organization_id, id) on delete cascade,
  check ((kind = 'schedule') = (cron is not null and cron_fields is not null)),
  check (kind = 'schedule' or (timezone is null and next_due_at is null)),
  check ((kind = 'event') = (event is not null)),
  check (kind = 'webhook' or token_hash is null)
);
-- The token lookup of every delivery, across organizations.
create unique index automation_triggers_token_key on app.automation_triggers (token_hash) where token_hash is not null;
-- The schedule tick's scan: enabled schedules by their next occurrence.
create index automation_triggers_due_idx on app.automation_triggers (next_due_at)
  where kind = 'schedule' and enabled and next_due_at is not null;
-- Event triggers of an organization by event name.
create index automation_triggers_event_idx on app.automation_triggers (organization_id, event)
  where kind = 'event' and enabled;

-- Accepted webhook deliveries, for deduplication: by the sender's delivery id for a
-- day, by identical body bytes for two minutes. scope is the project of the project
-- URL, or the nil uuid for the organization URL.
create table app.webhook_deliveries (
  organization_id uuid not null,
  id bigint generated always as identity,
  trigger_id uuid not null references app.automation_triggers (id) on delete cascade,
  scope uuid not null,
  delivery_id text,
  body_hash bytea not null,
  run_id uuid not null,
  received_at timestamptz not null default app.now(),
  primary key (organization_id, id)
);
create unique index webhook_deliveries_delivery_key on app.webhook_deliveries (trigger_id, scope, delivery_id)
  where delivery_id is not null;
-- A delivery id seen in another scope of the same trigger.
create index webhook_deliveries_delivery_idx on app.webhook_deliveries (trigger_id, delivery_id)
  where delivery_id is not null;
create index webhook_deliveries_body_idx on app.webhook_deliveries (trigger_id, scope, body_hash, received_at)
  where delivery_id is null;
create index webhook_deliveries_received_idx on app.webhook_deliveries (received_at);

-- The platform events of the spec and whether this deployment raises each yet. A
-- family that starts raising one flips `raised` in its own migration; an event
-- trigger may only name a raised event.
create table app.platform_events (
  name text primary key,
  raised boolean not null default false,
  description text not null
);
insert into app.platform_events (name, raised, description) values
  ('contact.created', false, 'a contact is created through the API, the app or an import'),
  ('contact.updated', false, 'a contact is changed'),
  ('contact.deleted', false, 'a contact is deleted'),
  ('conversation.created', false, 'a conversation opens in the inbox'),
  ('conversation.message_received', false, 'a message lands on an existing conversation'),
  ('project.created', true, 'a project is created'),
  ('task.created', false, 'a task is created on a board'),
  ('task.status_changed', false, 'a person moves a task to another status'),
  ('comment.created', false, 'a comment lands on a task'),
  ('comment.mentioned', false, 'a task comment mentions someone with @');

-- The outbox: events written in the transaction of the change that raises them,
-- drained by the worker into event-trigger runs (app.events_drain).
create table app.events (
  organization_id uuid not null references app.organizations (id) on delete cascade,
  id bigint generated always as identity,
  name text not null references app.platform_events (name),
  payload jsonb not null,
  -- The project the event happened in, when it has one.
  project_id uuid,
  actor_user_id uuid,
  raised_at timestamptz not null default app.now(),
  drained_at timestamptz,
  primary key (organization_id, id)
);
create index events_pending_idx on app.events (id) where drained_at is null;
create index events_drained_idx on app.events (drained_at) where drained_at is not null;

-- Notifications to people; rendered per locale when exported.
create table app.notifications (
  organization_id uuid not null references app.organizations (id) on delete cascade,
  id uuid not null default gen_random_uuid(),
  recipient_id uuid not null references app.users (id) on delete cascade,
  kind text not null,
  params jsonb not null default '{}',
  created_at timestamptz not null default app.now(),
  read_at timestamptz,
  primary key (organization_id, id)
);
create index notifications_recipient_idx on app.notifications (organization_id, recipient_id, created_at desc, id desc);

-- runs.trigger_id keeps no foreign key: a run names the trigger that started it
-- (startedBy trigger:<id>) after that trigger is gone. A trigger's last run:
create index runs_trigger_idx on app.runs (trigger_id, created_at desc) where trigger_id is not null;
